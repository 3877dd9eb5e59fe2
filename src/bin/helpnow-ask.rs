//! `helpnow-ask "question"`: what the offline helper answers, for operators and support staff.
//! Loads the help library the server loads (`server.content_dir`/help-library, from the same
//! settings: `./config` or `APP_CONFIG_DIR`, `APP_ENV`, `APP__...` variables), ranks it the same
//! way, and prints the chosen guide's file name without `.md` (or `none`) on the first line and
//! the members' answer below it. Exits 2 without a question, 1 when the library cannot be read.

use std::io::Write;
use std::process::ExitCode;

use helpnow::ai::library::HelpLibrary;
use helpnow::config::Settings;

const USAGE: &str = "usage: helpnow-ask \"question\"\n\
    Prints the help-library guide the offline helper chooses (its file name without .md, or\n\
    `none`) on the first line, then the answer a member would get.";

fn main() -> ExitCode {
    let words: Vec<String> = std::env::args().skip(1).collect();
    if words.iter().any(|word| word == "-h" || word == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let question = words.join(" ");
    if question.trim().is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let settings = match Settings::load() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("cannot load the settings: {error}");
            return ExitCode::from(1);
        }
    };
    let library = match HelpLibrary::load(&settings.server.content_dir.join("help-library")) {
        Ok(library) => library,
        Err(error) => {
            eprintln!("cannot load the help library: {error}");
            return ExitCode::from(1);
        }
    };
    // A reader that stops early (`| head -1`) is no error.
    match writeln!(std::io::stdout().lock(), "{}", library.ask(&question)) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("cannot print the answer: {error}");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}
