//! Google's Python client (`google-cloud-bigtable`), to look at what
//! another reader than this library sees. A pinned version is installed
//! once into a venv under the test target directory (from PyPI, about a
//! minute); `BIGTABLE_TTL_PYTHON` names a Python that already has it. A
//! machine that cannot install it fails the test that needs it, saying
//! why: a check that skips itself is none.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use bigtable_ttl::Connection;

/// The client's version the checks were written against.
const VERSION: &str = "google-cloud-bigtable==2.30.0";

/// A Python that imports Google's client, installing it the first time.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(provision).clone()
}

fn imports_client(python: &std::path::Path) -> bool {
    Command::new(python)
        .args(["-c", "import google.cloud.bigtable"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn provision() -> PathBuf {
    if let Some(named) = std::env::var_os("BIGTABLE_TTL_PYTHON") {
        let named = PathBuf::from(named);
        assert!(
            imports_client(&named),
            "BIGTABLE_TTL_PYTHON={} does not import google.cloud.bigtable \
             (pip install {VERSION})",
            named.display()
        );
        return named;
    }
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("google-python");
    let python = venv.join("bin/python");
    if imports_client(&python) {
        return python;
    }
    let run = |program: &std::path::Path, args: &[&str]| {
        let out = Command::new(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
        assert!(
            out.status.success(),
            "installing Google's Python client ({} {}) failed: {}\n\
             Install python3 with venv and pip and reach PyPI, or set \
             BIGTABLE_TTL_PYTHON to a Python with `pip install {VERSION}`.",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let venv_arg = venv.to_string_lossy().into_owned();
    run("python3".as_ref(), &["-m", "venv", "--clear", &venv_arg]);
    run(
        &python,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            VERSION,
        ],
    );
    assert!(
        imports_client(&python),
        "{VERSION} installed but not importable"
    );
    python
}

/// The row keys Google's Python client reads from `table` (every row,
/// no filter: what any reader that is not this library sees).
pub fn row_keys(conn: &Connection, table: &str) -> BTreeSet<String> {
    let script = "import sys\n\
        from google.cloud import bigtable\n\
        client = bigtable.Client(project=sys.argv[1], admin=False)\n\
        table = client.instance(sys.argv[2]).table(sys.argv[3])\n\
        for row in table.read_rows():\n    print(row.row_key.decode())\n";
    let out = Command::new(python())
        .env("BIGTABLE_EMULATOR_HOST", super::emulator_host())
        .args(["-c", script, conn.project(), conn.instance(), table])
        .output()
        .expect("running Google's Python client");
    assert!(
        out.status.success(),
        "Google's Python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}
