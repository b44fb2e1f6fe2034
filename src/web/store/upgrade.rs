//! Opening a database at a version with its upgrade steps, through `upgrade.js`: the open
//! runs `upgrade` in `upgradeneeded` and closes; [`open_current`] then opens it through
//! indexed_db_futures at the version it is. Two opens instead of one (a few milliseconds,
//! at open and reconnect only) keep the library's upgrade listener, and the float printing
//! its error messages bring, out of the `.wasm`.

use indexed_db_futures::database::Database;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::errors::{describe_open, dom_error};
use crate::core::safe_error::SafeError;

#[wasm_bindgen(module = "/src/web/store/upgrade.js")]
extern "C" {
    #[wasm_bindgen(js_name = openUpgraded)]
    fn open_upgraded(name: &str, version: u32, upgrade: &js_sys::Function) -> Promise;
}

/// Upgrade steps: run with the database in its `versionchange` transaction and the version
/// it had (0 for a new database). An `Err` aborts the upgrade.
pub type UpgradeSteps = fn(&web_sys::IdbDatabase, f64) -> Result<(), JsValue>;

/// Why [`upgrade_to`] did not bring the database to the version.
#[derive(Debug)]
pub enum UpgradeFailure {
    /// The database is at a higher version already (a newer build upgraded it).
    Newer,
    /// The open or the upgrade failed.
    Failed(SafeError),
}

/// Opens `name` at `version`, running `steps` when it was older, and closes it again.
///
/// # Errors
///
/// [`UpgradeFailure::Newer`] for a database at a higher version, otherwise the open's or the
/// upgrade's error as a safe error (its `DOMException` name as the code).
pub async fn upgrade_to(
    name: &str,
    version: u32,
    steps: UpgradeSteps,
) -> Result<(), UpgradeFailure> {
    let upgrade = Closure::<dyn FnMut(web_sys::IdbDatabase, f64) -> Result<(), JsValue>>::new(
        move |db: web_sys::IdbDatabase, old_version: f64| steps(&db, old_version),
    );
    let outcome = JsFuture::from(open_upgraded(
        name,
        version,
        upgrade.as_ref().unchecked_ref(),
    ))
    .await
    .unwrap_or_else(|error| error);
    if outcome.as_string().as_deref() == Some("done") {
        return Ok(());
    }
    match outcome.dyn_ref::<web_sys::DomException>() {
        Some(dom) if dom.name() == "VersionError" => Err(UpgradeFailure::Newer),
        Some(dom) => Err(UpgradeFailure::Failed(dom_error(dom))),
        None => Err(UpgradeFailure::Failed(super::errors::js_error(&outcome))),
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
