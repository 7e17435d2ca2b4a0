//! The findings of the credential scan that a person allowed as no secret, on this
//! machine only (`secrets-allowed.json`, never synced): writes holding them are
//! accepted from then on.

use super::*;

impl Store {
    /// `secrets-allowed.json`: findings a person allowed as no secret on this machine.
    pub fn secrets_allowed_file(&self) -> PathBuf {
        self.layout.root.join("secrets-allowed.json")
    }

    pub(super) fn load_allowed_secrets(&self) {
        if let Ok(Some(obj)) = read_json_object(&self.secrets_allowed_file()) {
            let allowed = obj
                .get("allowed")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            *self
                .secrets_allowed
                .write()
                .unwrap_or_else(|e| e.into_inner()) = allowed;
        }
    }

    pub(super) fn secret_allowed(&self, fingerprint: &str) -> bool {
        self.secrets_allowed
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(fingerprint)
    }

    /// A person says the text behind a credential finding (by its fingerprint, as the
    /// refusal gave it) is no secret: writes holding it are accepted from now on, on
    /// this machine. Saved at once.
    pub fn allow_secret(&self, fingerprint: &str) -> Result<(), StoreError> {
        let valid = fingerprint.len() == 16 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid {
            return Err(StoreError::Invalid(format!(
                "'{}' is not a finding: a refusal names it as 16 hex digits",
                limits::for_log(fingerprint)
            )));
        }
        let mut allowed = self
            .secrets_allowed
            .write()
            .unwrap_or_else(|e| e.into_inner());
        allowed.insert(fingerprint.to_ascii_lowercase());
        let mut list: Vec<&String> = allowed.iter().collect();
        list.sort();
        let mut obj = Object::new();
        obj.insert(
            "allowed".into(),
            Value::Array(list.into_iter().map(|f| Value::String(f.clone())).collect()),
        );
        write_json_object(&self.secrets_allowed_file(), &obj, 2, WriteMode::DURABLE)
            .map_err(StoreError::Save)
    }
}
