//! Opening a database at a version with its upgrade steps, through indexed_db_futures' open
//! request and its `upgradeneeded` listener ([`open_upgraded`]); [`open_current`] opens it at
//! the version it is (a database at a newer version than asked).

use indexed_db_futures::database::Database;
use indexed_db_futures::error::{Error, OpenDbError};
use indexed_db_futures::internals::SystemRepr;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use canvas_scheduler_core::SafeError;

use super::errors::{describe, describe_open, dom_error, js_error};

/// Upgrade steps: run with the database in its `versionchange` transaction and the version
/// it had (0 for a new database). An `Err` aborts the upgrade.
pub type UpgradeSteps = fn(&web_sys::IdbDatabase, f64) -> Result<(), JsValue>;

/// Why [`open_upgraded`] did not bring the database to the version.
#[derive(Debug)]
pub enum UpgradeFailure {
    /// The database is at a higher version already (a newer build upgraded it).
    Newer,
    /// The open or the upgrade failed.
    Failed(SafeError),
}

/// Opens `name` at `version`, running `steps` in `upgradeneeded` when it was older, and
/// returns the open connection.
///
/// # Errors
///
/// [`UpgradeFailure::Newer`] for a database at a higher version, otherwise the open's or the
/// upgrade's error as a safe error (its `DOMException` name as the code).
pub async fn open_upgraded(
    name: &str,
    version: u32,
    steps: UpgradeSteps,
) -> Result<Database, UpgradeFailure> {
    Database::open(name)
        .with_version(version)
        .with_on_upgrade_needed(move |event, db| {
            steps(db.as_sys().unchecked_ref(), event.old_version()).map_err(Error::from)
        })
        .await
        .map_err(|error| open_failure(&error))
}

/// Opens `name` at `version`, running `steps` when it was older, and closes it again.
///
/// # Errors
///
/// As [`open_upgraded`].
pub async fn upgrade_to(
    name: &str,
    version: u32,
    steps: UpgradeSteps,
) -> Result<(), UpgradeFailure> {
    open_upgraded(name, version, steps)
        .await
        .map(Database::close)
}

fn open_failure(error: &OpenDbError) -> UpgradeFailure {
    match error {
        OpenDbError::Base(Error::DomException(dom)) => {
            let dom = dom.as_sys();
            if dom.name() == "VersionError" {
                UpgradeFailure::Newer
            } else {
                UpgradeFailure::Failed(dom_error(dom))
            }
        }
        // What the upgrade steps threw, as they threw it.
        OpenDbError::Base(Error::Unknown(thrown)) => {
            UpgradeFailure::Failed(js_error(thrown.as_ref()))
        }
        OpenDbError::Base(other) => {
            UpgradeFailure::Failed(SafeError::new("storage_error", &describe(other)))
        }
        // Node, a worker without storage, a browser with storage disabled: said plainly.
        OpenDbError::UnsupportedEnvironment | OpenDbError::NullFactory => {
            UpgradeFailure::Failed(SafeError::new(
                "NotSupportedError",
                "IndexedDB is not available in this environment (no indexedDB global)",
            ))
        }
        OpenDbError::VersionZero => {
            UpgradeFailure::Failed(SafeError::new("storage_error", &describe_open(error)))
        }
    }
}

/// Opens `name` at the version it is (no upgrade).
///
/// # Errors
///
/// The open's error as a safe error with code `storage_unavailable`.
pub async fn open_current(name: &str) -> Result<Database, SafeError> {
    Database::open(name).await.map_err(|error| {
        SafeError::new(
            "storage_unavailable",
            &format!("cannot open the database: {}", describe_open(&error)),
        )
    })
}
