//! Which files a shell command only reads (spec since-0.9.30 §1.1): `cat`, `head`,
//! `tail`, `less`, `sed -n`, `grep`, `jq`, `nl` and `rg` with the files they name.
//!
//! Missing a read is fine; inventing one is not. So the command is lexed as a shell
//! would split it (quotes, escapes, operators, redirections), every construct we do
//! not follow (here-documents, unbalanced quotes, expansions) gives up or skips the
//! word, and each command's options are read from a closed list: an option we do not
//! know could take the next word as its argument.
//!
//! The lexer is ours: the shell-word crates (`shlex`, `shell-words`) split words but
//! not at `|`, `;` or `&&`, and they unquote before a redirection can be told from a
//! quoted `>`.

/// One lexed piece of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A word, quotes removed. `plain` is false when it held a character that expands
    /// (`$`, a backtick, a glob or brace character) outside single quotes, or any such
    /// character at all: its value is not the file name the shell would use.
    Word { text: String, plain: bool },
    /// `|`, `||`, `&`, `&&`, `;`, `;;`, `(`, `)`, `|&` or a newline: the end of a
    /// simple command.
    Separator,
    /// `<`: the next word is read.
    ReadFrom,
    /// `>`, `>>`, `>|`, `&>`, `>&`, `<>`: the next word is written or duplicated.
    WriteTo,
}

/// Why a command line is not analysed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// A here-document or here-string (`<<`, `<<<`): its body is not a file.
    HereDocument,
    /// An unclosed quote, or a trailing backslash.
    Unbalanced,
}

/// Characters that make a word's value differ from what the shell would use.
const EXPANDING: &[char] = &['$', '`', '*', '?', '[', ']', '{', '}'];

/// Split `line` into tokens the way a POSIX shell's lexer would, without expanding
/// anything.
fn lex(line: &str) -> Result<Vec<Token>, Unreadable> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    let mut word = String::new();
    let mut in_word = false;
    let mut plain = true;
    // Ends the word being built, if any.
    let flush =
        |tokens: &mut Vec<Token>, word: &mut String, in_word: &mut bool, plain: &mut bool| {
            if *in_word {
                tokens.push(Token::Word {
                    text: std::mem::take(word),
                    plain: *plain,
                });
            }
            *in_word = false;
            *plain = true;
        };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => flush(&mut tokens, &mut word, &mut in_word, &mut plain),
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => {
                            plain &= !EXPANDING.contains(&c);
                            word.push(c);
                        }
                        None => return Err(Unreadable::Unbalanced),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(Unreadable::Unbalanced),
                        },
                        Some(c) => {
                            plain &= !EXPANDING.contains(&c);
                            word.push(c);
                        }
                        None => return Err(Unreadable::Unbalanced),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(Unreadable::Unbalanced),
            },
            '\n' | ';' | '(' | ')' => {
                flush(&mut tokens, &mut word, &mut in_word, &mut plain);
                if c == ';' && chars.peek() == Some(&';') {
                    chars.next();
                }
                tokens.push(Token::Separator);
            }
            '|' => {
                flush(&mut tokens, &mut word, &mut in_word, &mut plain);
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                tokens.push(Token::Separator);
            }
            '&' => {
                flush(&mut tokens, &mut word, &mut in_word, &mut plain);
                match chars.peek() {
                    Some('&') => {
                        chars.next();
                        tokens.push(Token::Separator);
                    }
                    Some('>') => {
                        chars.next();
                        if chars.peek() == Some(&'>') {
                            chars.next();
                        }
                        tokens.push(Token::WriteTo);
                    }
                    _ => tokens.push(Token::Separator),
                }
            }
            '<' | '>' => {
                // Digits just before a redirection name a file descriptor, not a word.
                if in_word && word.bytes().all(|b| b.is_ascii_digit()) && plain {
                    word.clear();
                    in_word = false;
                } else {
                    flush(&mut tokens, &mut word, &mut in_word, &mut plain);
                }
                if c == '<' {
                    match chars.peek() {
                        Some('<') => return Err(Unreadable::HereDocument),
                        Some('>') => {
                            chars.next();
                            tokens.push(Token::WriteTo);
                        }
                        Some('&') => {
                            chars.next();
                            tokens.push(Token::WriteTo);
                        }
                        _ => tokens.push(Token::ReadFrom),
                    }
                } else {
                    if matches!(chars.peek(), Some('>' | '|' | '&')) {
                        chars.next();
                    }
                    tokens.push(Token::WriteTo);
                }
            }
            c => {
                in_word = true;
                plain &= !EXPANDING.contains(&c);
                word.push(c);
            }
        }
    }
    flush(&mut tokens, &mut word, &mut in_word, &mut plain);
    Ok(tokens)
}

/// A file operand a command line reads, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operand {
    /// The word, unquoted (may start with `~`, may be relative).
    pub path: String,
    /// A `cd`, `pushd` or `popd` came before it: a relative path is relative to a
    /// folder we do not know.
    pub after_cd: bool,
}

/// How a reading command takes its words.
#[derive(Debug, Clone, Copy)]
enum Reader {
    Cat,
    Less,
    Head,
    Tail,
    Sed,
    Grep,
    Jq,
    Nl,
    Rg,
}

impl Reader {
    fn of(program: &str) -> Option<Reader> {
        let name = program.rsplit('/').next().unwrap_or(program);
        Some(match name {
            "cat" => Reader::Cat,
            "less" => Reader::Less,
            "head" => Reader::Head,
            "tail" => Reader::Tail,
            "sed" => Reader::Sed,
            "grep" => Reader::Grep,
            "jq" => Reader::Jq,
            "nl" => Reader::Nl,
            "rg" => Reader::Rg,
            _ => return None,
        })
    }

    /// How many words follow an option this reader knows (`-n`, `--lines` written
    /// without `=`), or `None` for one it does not.
    fn known_arguments(self, option: &str) -> Option<usize> {
        let of = |none: &[&str], one: &[&str]| {
            if none.contains(&option) {
                Some(0)
            } else if one.contains(&option) {
                Some(1)
            } else {
                None
            }
        };
        match self {
            Reader::Cat | Reader::Less => None,
            Reader::Head => of(&["-q", "-v"], &["-n", "-c", "--lines", "--bytes"]),
            Reader::Tail => of(
                &["-q", "-v", "-f", "-F", "--follow", "--retry"],
                &[
                    "-n",
                    "-c",
                    "-s",
                    "--lines",
                    "--bytes",
                    "--sleep-interval",
                    "--pid",
                ],
            ),
            Reader::Sed => of(
                &[
                    "-n", "--quiet", "--silent", "-E", "-r", "-s", "-u", "-z", "--posix",
                ],
                &["-e", "-f", "--expression", "--file", "-l", "--line-length"],
            ),
            Reader::Grep => of(
                &[
                    "-i", "-v", "-n", "-c", "-l", "-L", "-h", "-H", "-o", "-q", "-s", "-w", "-x",
                    "-E", "-F", "-G", "-P", "-a", "-I", "-z", "--color", "--colour",
                ],
                &[
                    "-e",
                    "-f",
                    "--regexp",
                    "--file",
                    "-m",
                    "-A",
                    "-B",
                    "-C",
                    "-d",
                    "-D",
                    "--max-count",
                    "--after-context",
                    "--before-context",
                    "--context",
                    "--directories",
                    "--devices",
                ],
            ),
            Reader::Jq => match option {
                "--arg" | "--argjson" | "--slurpfile" | "--rawfile" => Some(2),
                "--indent" | "-f" | "--from-file" | "-L" => Some(1),
                "-r" | "-c" | "-e" | "-n" | "-s" | "-S" | "-j" | "-a" | "-C" | "-M"
                | "--raw-output" | "--compact-output" | "--slurp" | "--null-input"
                | "--sort-keys" | "--tab" => Some(0),
                _ => None,
            },
            Reader::Nl => of(
                &["-p", "--no-renumber"],
                &["-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"],
            ),
            Reader::Rg => of(
                &[
                    "-i",
                    "-S",
                    "-s",
                    "-w",
                    "-x",
                    "-F",
                    "-n",
                    "-N",
                    "-H",
                    "-I",
                    "-l",
                    "-c",
                    "-v",
                    "-o",
                    "-u",
                    "-uu",
                    "-uuu",
                    "--hidden",
                    "--no-heading",
                    "--heading",
                    "--ignore-case",
                    "--smart-case",
                    "--case-sensitive",
                    "--fixed-strings",
                    "--word-regexp",
                    "--line-number",
                    "--no-line-number",
                    "--count",
                    "--files-with-matches",
                    "--invert-match",
                    "--only-matching",
                    "--no-ignore",
                    "--json",
                    "--vimgrep",
                ],
                &[
                    "-e",
                    "-f",
                    "--regexp",
                    "--file",
                    "-A",
                    "-B",
                    "-C",
                    "-m",
                    "-g",
                    "-t",
                    "-T",
                    "--glob",
                    "--type",
                    "--type-not",
                    "--max-count",
                    "--after-context",
                    "--before-context",
                    "--context",
                ],
            ),
        }
    }

    /// Whether an option this reader does not know makes the command untrusted: `nl`
    /// and `rg` are read from a closed list. The others' unknown options take no
    /// argument (`cat -A`, `grep --null`), or are written with `=`.
    fn closed(self) -> bool {
        matches!(self, Reader::Nl | Reader::Rg)
    }

    /// Whether the first operand is a script, pattern or filter (not a file) unless an
    /// option gave it.
    fn first_operand_is_program(self) -> bool {
        matches!(self, Reader::Sed | Reader::Grep | Reader::Jq | Reader::Rg)
    }

    /// Options after which no operand is a script, pattern or filter.
    fn gives_program(self, option: &str) -> bool {
        match self {
            Reader::Sed => matches!(option, "-e" | "-f" | "--expression" | "--file"),
            Reader::Grep | Reader::Rg => matches!(option, "-e" | "-f" | "--regexp" | "--file"),
            Reader::Jq => matches!(option, "-f" | "--from-file"),
            _ => false,
        }
    }
}

/// The files `command` reads with plain reading commands, in order, each once: at
/// most `limit`. Nothing is resolved or checked against the file system here.
pub fn read_operands(command: &str, limit: usize) -> Result<Vec<Operand>, Unreadable> {
    let tokens = lex(command)?;
    let mut out: Vec<Operand> = Vec::new();
    let mut after_cd = false;
    for segment in tokens.split(|t| *t == Token::Separator) {
        let found = segment_reads(segment, &mut after_cd);
        for path in found {
            if out.len() == limit {
                return Ok(out);
            }
            if !out.iter().any(|o| o.path == path) {
                out.push(Operand { path, after_cd });
            }
        }
    }
    Ok(out)
}

/// The files one simple command reads. Updates `after_cd` when the command changes
/// the shell's folder.
fn segment_reads(segment: &[Token], after_cd: &mut bool) -> Vec<String> {
    // Words with their redirections taken out: `< file` is read whatever the program.
    let mut words: Vec<(&str, bool)> = Vec::new();
    let mut redirected_in: Vec<(&str, bool)> = Vec::new();
    let mut tokens = segment.iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word { text, plain } => words.push((text, *plain)),
            Token::ReadFrom => {
                if let Some(Token::Word { text, plain }) = tokens.next() {
                    redirected_in.push((text, *plain));
                }
            }
            Token::WriteTo => {
                tokens.next();
            }
            Token::Separator => {}
        }
    }
    // Leading `NAME=value` assignments are the command's environment.
    let first = words
        .iter()
        .position(|(w, _)| !is_assignment(w))
        .unwrap_or(words.len());
    let words = &words[first..];
    let mut files: Vec<String> = Vec::new();
    let keep = |files: &mut Vec<String>, (word, plain): (&str, bool)| {
        if plain && !word.is_empty() && word != "-" {
            files.push(word.to_string());
        }
    };
    let Some(&(program, program_plain)) = words.first() else {
        for w in redirected_in {
            keep(&mut files, w);
        }
        return files;
    };
    if matches!(program, "cd" | "pushd" | "popd") {
        *after_cd = true;
        return files;
    }
    let reader = program_plain.then(|| Reader::of(program)).flatten();
    if let Some(reader) = reader
        && let Some(operands) = operands_of(reader, &words[1..])
    {
        for w in operands {
            keep(&mut files, w);
        }
    }
    if reader.is_some() {
        for w in redirected_in {
            keep(&mut files, w);
        }
    }
    files
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The file operands of a reading command's arguments, or `None` when the command
/// is not a plain read (sed without `-n` or with `-i`, jq with `--args`, an option we
/// do not know for `nl` or `rg`).
fn operands_of<'a>(reader: Reader, args: &[(&'a str, bool)]) -> Option<Vec<(&'a str, bool)>> {
    let mut operands = Vec::new();
    let mut program_given = false;
    let mut quiet = false;
    let mut options_done = false;
    // Words of option values still to skip.
    let mut skip = 0usize;
    // Takes note of one option: how many words it skips, or `None` when the command
    // is not a plain read.
    let mut option = |name: &str| -> Option<usize> {
        match (reader, name) {
            (Reader::Sed, "-i" | "--in-place") | (Reader::Jq, "--args" | "--jsonargs") => {
                return None;
            }
            (Reader::Sed, "-n" | "--quiet" | "--silent") => quiet = true,
            _ => {}
        }
        program_given |= reader.gives_program(name);
        match reader.known_arguments(name) {
            Some(n) => Some(n),
            None if reader.closed() => None,
            None => Some(0),
        }
    };
    for &(word, plain) in args {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if options_done || !word.starts_with('-') || word == "-" {
            operands.push((word, plain));
            continue;
        }
        if word == "--" {
            options_done = true;
        } else if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            let takes = option(&format!("--{name}"))?;
            if !value {
                skip = takes;
            }
        } else if matches!(reader, Reader::Head | Reader::Tail)
            && word[1..].bytes().all(|b| b.is_ascii_digit())
        {
            // `head -20`: a count, not a file.
        } else if matches!(reader, Reader::Sed) && word.starts_with("-i") {
            return None; // `-i.bak`
        } else if reader.known_arguments(word).is_some() {
            skip = option(word)?;
        } else {
            // A bundle (`-in`): each letter an option; one that takes a value ends it,
            // the value attached (`-n5`) or in the next word.
            for (at, letter) in word.char_indices().skip(1) {
                let takes = option(&format!("-{letter}"))?;
                if takes > 0 {
                    if at + letter.len_utf8() == word.len() {
                        skip = takes;
                    }
                    break;
                }
            }
        }
    }
    if matches!(reader, Reader::Sed) && !quiet {
        return None;
    }
    if reader.first_operand_is_program() && !program_given && !operands.is_empty() {
        operands.remove(0);
    }
    Some(operands)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(command: &str) -> Vec<String> {
        read_operands(command, 8)
            .map(|ops| ops.into_iter().map(|o| o.path).collect())
            .unwrap_or_default()
    }

    #[test]
    fn plain_reads_name_their_files() {
        assert_eq!(reads("cat README.md | head -5"), ["README.md"]);
        assert_eq!(
            reads("head -n 20 src/a.rs src/b.rs"),
            ["src/a.rs", "src/b.rs"]
        );
        assert_eq!(reads("head -20 src/a.rs"), ["src/a.rs"]);
        assert_eq!(reads("tail -n5 log.txt"), ["log.txt"]);
        assert_eq!(reads("sed -n '1,40p' src/main.rs"), ["src/main.rs"]);
        assert_eq!(reads("grep -n 'fn main' src/main.rs"), ["src/main.rs"]);
        assert_eq!(reads("grep -e x -e y a.txt"), ["a.txt"]);
        assert_eq!(reads("rg -n TODO src/lib.rs"), ["src/lib.rs"]);
        assert_eq!(reads("jq '.name' package.json"), ["package.json"]);
        assert_eq!(reads("jq -f prog.jq data.json"), ["data.json"]);
        assert_eq!(reads("nl -ba src/x.py"), ["src/x.py"]);
        assert_eq!(reads("LC_ALL=C cat 'a b.txt'"), ["a b.txt"]);
        assert_eq!(reads("/usr/bin/cat x.txt"), ["x.txt"]);
        assert_eq!(reads("wc -l < input.txt"), Vec::<String>::new());
        assert_eq!(reads("cat < input.txt"), ["input.txt"]);
        assert_eq!(
            reads("cat a.txt && cat b.txt; cat a.txt"),
            ["a.txt", "b.txt"]
        );
    }

    #[test]
    fn writes_and_unknowns_are_not_reads() {
        assert!(reads("sed 's/a/b/' src/app.py").is_empty());
        assert!(reads("sed -i -n 's/a/b/p' src/app.py").is_empty());
        assert!(reads("sed -n -i.bak 's/a/b/p' src/app.py").is_empty());
        assert!(reads("jq --args '.' a.json").is_empty());
        assert!(reads("nl --weird a.txt").is_empty());
        assert!(reads("rg --pcre2 foo a.txt").is_empty());
        assert!(reads("python3 script.py data.csv").is_empty());
        assert!(reads("cat > out.txt").is_empty());
        assert!(reads("echo hi 2> err.txt").is_empty());
    }

    #[test]
    fn expansions_are_skipped_and_heredocs_give_up() {
        assert!(reads("cat $HOME/x.txt").is_empty());
        assert!(reads("cat src/*.rs").is_empty());
        assert!(reads("cat `which x`").is_empty());
        assert!(reads("cat a{1,2}.txt").is_empty());
        assert_eq!(
            read_operands("cat <<EOF\nx\nEOF", 8),
            Err(Unreadable::HereDocument)
        );
        assert_eq!(
            read_operands("cat 'unclosed", 8),
            Err(Unreadable::Unbalanced)
        );
        // Quoted operators and redirections are part of a word.
        assert_eq!(reads("cat 'a|b.txt' \"c>d\""), ["a|b.txt", "c>d"]);
    }

    #[test]
    fn a_change_of_folder_is_remembered() {
        let ops = read_operands("cat a.txt; cd sub && cat b.txt", 8).expect("lexes");
        assert_eq!(
            ops,
            [
                Operand {
                    path: "a.txt".into(),
                    after_cd: false
                },
                Operand {
                    path: "b.txt".into(),
                    after_cd: true
                },
            ]
        );
    }

    #[test]
    fn at_most_the_limit() {
        let many: String = (0..20).map(|i| format!(" f{i}.txt")).collect();
        assert_eq!(
            read_operands(&format!("cat{many}"), 8)
                .expect("lexes")
                .len(),
            8
        );
    }

    #[test]
    fn huge_or_hostile_lines_stay_linear() {
        let line = "cat ".to_string() + &"'a' ".repeat(200_000);
        assert_eq!(reads(&line), ["a"]);
        let pipes = "|".repeat(500_000);
        assert!(reads(&pipes).is_empty());
    }
}
