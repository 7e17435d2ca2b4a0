//! The typed contract of every REST and WebSocket body the graph view and the tray
//! read or send, split by concern: the view's reads ([`view`]), its steps
//! ([`steps`]), the REST writes it makes ([`writes`]), the activity panel
//! ([`activity`]), the recall panel ([`recall`]), `/ws` ([`live`]), git sync
//! ([`sync`]) and the stored records ([`stored`]). Each is a serde type, and ts-rs
//! derives its TypeScript twin into `ui/src/generated/payloads.ts` ([`typescript`]),
//! so the page and the server cannot disagree on a shape unnoticed: a unit test fails
//! when the committed file differs (`KG_UPDATE_TS=1 cargo test -p kg-server --lib
//! payload` rewrites it).
//!
//! Field order is key order on the wire (serde_json keeps insertion order). Rounded
//! numbers are rounded ([`round_to`]) when a payload is built; `f64` fields always
//! print as floats (`1.0`), integer fields as integers. A key that is sometimes absent
//! (rather than `null`) is `skip_serializing_if` plus `#[ts(optional)]`.

mod activity;
mod live;
mod recall;
mod steps;
mod stored;
mod sync;
mod typescript;
mod view;
mod writes;

pub use activity::*;
pub use live::*;
pub use recall::*;
pub use steps::*;
pub use stored::*;
pub use sync::*;
pub use typescript::typescript;
pub use view::*;
pub use writes::*;

use kg_core::round_to;
use kg_core::{Change, EdgeKey};
use kg_core::{ChangeKind, TierMoves};
use kg_core::{Level, Node, Object, Tier};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::any::TypeId;
use ts_rs::TS;

/// A payload as the JSON value the wire writer (`pyfmt::to_json`) prints.
pub fn value<T: Serialize>(payload: &T) -> Value {
    // Every payload is maps with string keys over strings, numbers and booleans, which
    // serde_json always converts; `null` is what a failure would send.
    serde_json::to_value(payload).unwrap_or_else(|e| {
        log::error!("cannot convert a payload to JSON: {e}");
        Value::Null
    })
}

/// A kg-core enum as the string its `as_str` writes on the wire, with a TypeScript union
/// of those strings. Serialising goes through kg-core's `as_str`, so the bytes cannot
/// change here; a unit test checks that the TypeScript names agree with it.
macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident = $core:ty { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, TS)]
        pub enum $name {
            $(#[ts(rename = $text)] $variant),+
        }

        impl $name {
            #[cfg(test)]
            const ALL: &[$name] = &[$($name::$variant),+];
        }

        impl From<$core> for $name {
            fn from(x: $core) -> Self {
                match x {
                    $(<$core>::$variant => $name::$variant),+
                }
            }
        }

        impl From<$name> for $core {
            fn from(x: $name) -> Self {
                match x {
                    $($name::$variant => <$core>::$variant),+
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(<$core>::from(*self).as_str())
            }
        }
    };
}

wire_enum! {
    /// One of the two graphs: cross-project knowledge or this codebase's.
    LevelName = Level { User => "user", Project => "project" }
}

wire_enum! {
    /// Where a node stands in the bounded memory.
    TierName = Tier { Active => "active", Archived => "archived", Orphaned => "orphaned" }
}

wire_enum! {
    /// Where a level's rendered size stands against its budget.
    BudgetState = kg_core::BudgetState {
        UnderFill => "under_fill",
        Settled => "settled",
        Over => "over",
    }
}

wire_enum! {
    /// The pool a node was scored in: active nodes only (the archive order) or active
    /// and archived ones (the refill order).
    Pool = kg_core::Pool { Active => "active", Unified => "active+archived" }
}

wire_enum! {
    /// What one item of maintenance debt is.
    DebtKind = kg_core::DebtKind { Oversized => "oversized", Unconnected => "unconnected", StaleTouch => "stale_touch" }
}

wire_enum! {
    /// A graph's maintenance debt verdict.
    DebtLevel = kg_core::DebtLevel { Low => "LOW", Med => "MED", High => "HIGH" }
}

// ----- parts several answers share ------------------------------------------------------

/// How many nodes a level holds in each tier.
#[derive(Debug, Clone, Copy, Serialize, TS)]
pub struct Counts {
    pub active: usize,
    pub archived: usize,
    pub orphaned: usize,
}

impl From<(usize, usize, usize)> for Counts {
    fn from((active, archived, orphaned): (usize, usize, usize)) -> Counts {
        Counts {
            active,
            archived,
            orphaned,
        }
    }
}

/// A level's rendered size, as the compactor charges it, against its budget.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Budget {
    pub chars: usize,
    pub budget: usize,
    pub fill_line: usize,
    /// `fill_line / budget`, two decimals.
    pub fill_ratio: f64,
    pub anchor_chars: usize,
    pub anchor_budget: usize,
    pub state: BudgetState,
    /// Gists longer than this count as maintenance debt (they scan badly).
    pub scan_limit: usize,
    /// Days a new node is protected from archiving (how far: see `grace_share`).
    pub grace_days: f64,
    /// Characters of node lines the new nodes may hold out of compaction's reach, the
    /// newest first (our policy); `None` when grace protects every new node (the
    /// reference's).
    pub grace_share: Option<usize>,
    /// Active nodes still inside that grace period.
    pub active_in_grace: usize,
    /// Days until the first of them leaves its grace period (one decimal), if any.
    pub first_grace_ends_in_days: Option<f64>,
    /// What happens to the level next, in words (the gauge's sentence).
    pub outlook: String,
}

impl Budget {
    /// The budget of an inspected level, with what its grace periods allow.
    pub fn of(inspection: &kg_core::LevelInspection, grace_days: f64) -> Budget {
        let b = &inspection.budget;
        let in_grace = || {
            inspection
                .nodes
                .iter()
                .filter(|why| why.tier == Tier::Active)
                .filter_map(|why| why.grace_left_days)
        };
        Budget {
            chars: b.chars,
            budget: b.budget,
            fill_line: b.fill_line,
            fill_ratio: round_to(b.fill_line as f64 / b.budget as f64, 2),
            anchor_chars: b.anchor_chars,
            anchor_budget: b.anchor_budget,
            state: b.state.into(),
            scan_limit: kg_core::GIST_SCAN_LIMIT,
            grace_days,
            grace_share: inspection.grace_share,
            active_in_grace: in_grace().count(),
            first_grace_ends_in_days: in_grace().reduce(f64::min),
            outlook: inspection.outlook.clone(),
        }
    }
}

/// A graph's maintenance debt, as `Debt::to_object` writes it for the survey (a unit
/// test holds the two together).
#[derive(Debug, Clone, Serialize, TS)]
pub struct Debt {
    /// Two decimals.
    pub score: f64,
    pub level: DebtLevel,
    pub oversized_gists: usize,
    pub unconnected_active: usize,
    pub active_nodes: usize,
    /// One decimal (14 when never maintained).
    pub untended_days: f64,
    pub never_maintained: bool,
    pub active_days_7d: usize,
    /// Merge-conflict notes waiting on the graph's nodes (they make the level at least
    /// MED); absent when there are none, as in the survey.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub merge_conflicts: Option<usize>,
    /// Touches of active nodes whose file is gone (our policy); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub dangling_touches: Option<usize>,
    /// The active nodes holding them (what the deficit weighs); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub dangling_nodes: Option<usize>,
    /// Items a sync held back from the graph (content from a remote that breaks a
    /// write rule; `kg-memory sync status` lists them); absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub held_back: Option<usize>,
}

impl From<&kg_core::Debt> for Debt {
    fn from(d: &kg_core::Debt) -> Debt {
        Debt {
            score: round_to(d.score, 2),
            level: d.level.into(),
            oversized_gists: d.oversized,
            unconnected_active: d.unconnected,
            active_nodes: d.active_nodes,
            untended_days: round_to(d.untended_days, 1),
            never_maintained: d.never_maintained,
            active_days_7d: d.active_days_7d,
            merge_conflicts: (d.merge_conflicts > 0).then_some(d.merge_conflicts),
            dangling_touches: (d.stale_touches > 0).then_some(d.stale_touches),
            dangling_nodes: (d.stale_touches > 0).then_some(d.stale_nodes),
            held_back: (d.held_back > 0).then_some(d.held_back),
        }
    }
}

/// The debt of the level on screen, with the factors its score multiplies.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LevelDebt<'a> {
    #[serde(flatten)]
    pub debt: Debt,
    /// `min(1, untended_days / 14)`, three decimals.
    pub staleness: f64,
    /// `min(1, active_days_7d / 4)`, three decimals.
    pub activity: f64,
    /// `(oversized + 0.5 × unconnected) / active`, before capping at 1; three decimals.
    pub deficit: f64,
    /// The DEBT line `kg_read` prints.
    pub line: &'a str,
    /// How a merge-conflict note begins ([`kg_core::CONFLICT_NOTE_PREFIX`]): the view
    /// lists the nodes holding one, which `merge_conflicts` counts.
    pub conflict_note_prefix: &'static str,
}

impl<'a> From<&'a kg_core::DebtFactors> for LevelDebt<'a> {
    fn from(d: &'a kg_core::DebtFactors) -> LevelDebt<'a> {
        LevelDebt {
            debt: (&d.debt).into(),
            staleness: round_to(d.staleness, 3),
            activity: round_to(d.activity, 3),
            deficit: round_to(d.deficit, 3),
            line: &d.line,
            conflict_note_prefix: kg_core::CONFLICT_NOTE_PREFIX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The string unions in the TypeScript name exactly what kg-core's `as_str` writes.
    #[test]
    fn wire_enums_name_what_kg_core_writes() {
        fn check<T: TS + Serialize>(all: &[T]) {
            let cfg = ts_rs::Config::new();
            let written: Vec<String> = all
                .iter()
                .map(|v| serde_json::to_string(v).unwrap())
                .collect();
            assert_eq!(T::inline(&cfg), written.join(" | "), "{}", T::ident(&cfg));
        }
        check(LevelName::ALL);
        check(TierName::ALL);
        check(BudgetState::ALL);
        check(Pool::ALL);
        check(DebtKind::ALL);
        check(DebtLevel::ALL);
    }

    /// The catalogue's debt and the survey's (`Debt::to_object`) are one shape.
    #[test]
    fn debt_is_written_as_the_survey_writes_it() {
        let d = kg_core::Debt {
            score: 0.123_456,
            level: kg_core::DebtLevel::Med,
            oversized: 2,
            unconnected: 3,
            active_nodes: 40,
            untended_days: 14.0,
            never_maintained: true,
            active_days_7d: 5,
            burst: 0,
            merge_conflicts: 0,
            stale_touches: 0,
            stale_nodes: 0,
            held_back: 0,
        };
        assert_eq!(value(&Debt::from(&d)), Value::Object(d.to_object()));
        let d = kg_core::Debt {
            untended_days: 3.25,
            never_maintained: false,
            level: kg_core::DebtLevel::Low,
            ..d
        };
        assert_eq!(value(&Debt::from(&d)), Value::Object(d.to_object()));
        let d = kg_core::Debt {
            merge_conflicts: 2,
            held_back: 0,
            ..d
        };
        let written = value(&Debt::from(&d));
        assert_eq!(written, Value::Object(d.to_object()));
        assert_eq!(written["merge_conflicts"], 2, "{written}");
        let d = d.with_stale_touches(5, 3);
        let written = value(&Debt::from(&d));
        assert_eq!(written, Value::Object(d.to_object()));
        assert_eq!(
            (
                written["dangling_touches"].as_u64(),
                written["dangling_nodes"].as_u64()
            ),
            (Some(5), Some(3))
        );
    }
}
