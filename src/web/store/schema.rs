//! The ledger database schema and its upgrade steps.
//!
//! Versions only ever *add* object stores; no step deletes a store or rewrites a record, so
//! an upgrade can never drop queued work. Each step also checks what already exists, so a
//! database created by hand or by an interrupted upgrade is completed rather than rejected.
//!
//! | version | adds |
//! |---|---|
//! | 1 | `operations`, `requests`, `meta` |
//! | 2 | `lease`, `events` |
//! | 3 | `blobs`, `quarantine` |
//! | 4 | `inbox` (auto-increment keys: intents of tabs that do not dispatch); records become JSON
//!text; `lease` becomes `dispatcher_lease` |
//! | 5 | `operation_pages` (numeric keys; a multi-entry index `by_operation` on each page's `ids`); deletes `meta` |
//! | 6 | `leader_lease`, deleting `dispatcher_lease`: operation pages are written in the packed form |
//! | 7 | `tombstones` (numeric keys growing with time; an index `by_id` on `id`): settled operations past the retention policy are compacted to tombstones |
//! | 8 | `tombstone_hashes`: tombstones are written a page per batch (`tombstones` under the key `[time]`), with the page's id hashes beside it |
//! | 9 | `settled`: the archive. A settled operation leaves the working stores as it is compacted,
//!and its record stays whole here, keyed by its tombstone's key, read only by a look-up |
//! | 10 | `ledger_lease`, deleting `leader_lease`: builds of version 8 and before are shut out |
//!
//! Within version 4, `events` went from one record per event (keyed by its `seq`) to one page
//! per persisted batch (a JSON array keyed by its last `seq`); the loader reads both. A build
//! from before that reads a page as a record it does not know and sets it aside in
//! `quarantine`: the event log only (diagnostics), never queued work, so this needed no new
//! version (a version bump would make every open tab reconnect).
//!
//! Version 4 is the one exception to "only add": it deletes the `lease` store (one record, the
//! lease — never queued work) and keeps the lease in `dispatcher_lease`. Builds up to version
//! 3 open a newer database when it has every store they use; without `lease` they refuse it,
//! so a stale page of an earlier build can never take the lease and quarantine records it
//! cannot read. The fence starts again from 1: no holder of an older fence can open the
//! database any more.
//!
//! Version 5 stores the operations a batch writes for the first time as pages
//! (`canvas_scheduler_core::operation_pages`). A version-4 build would not read them: it would take the
//! lease and send later operations of a canvas before the paged ones. So version 5 also
//! deletes `meta` — unwritten since version 4 stopped writing it (every value it held is
//! derived from the records at load) — and a version-4 build, which needs `meta`, refuses
//! the database instead of opening it.
//!
//! Version 6 writes operation pages in the packed form (`canvas_scheduler_core::packed`), which a
//! version-5 build does not read: it would set the pages aside and send later operations
//! first. So version 6 moves the lease, as version 4 did: `dispatcher_lease` is deleted and
//! the lease lives in `leader_lease`. A version-5 build (an open tab is closed by the
//! `versionchange`) then refuses the database for the missing store instead of opening it. The
//! fence starts again from 1, for the same reason as in version 4: no holder of an older
//! fence can open the database any more. This build reads pages of either form.
//!
//! Version 7 adds `tombstones` and changes no record: a ledger of version 6 opens with all its
//! work, and its settled history is compacted afterwards, slice by slice, as any history
//! past the policy is (`canvas_scheduler_core::retention`). The lease stays where it is: a version-6
//! build that opens a version-7 database finds every record it reads intact and every
//! unsettled operation whole (nothing unsettled is ever compacted). What it lacks is the
//! tombstones: it would accept an enqueue of a compacted id as a new operation, and refuse a
//! dependency on one as `unknown_dependency` — never lose or resend stored work. An open tab
//! of version 6 is closed by the `versionchange` and reloads.
//!
//! Version 8 adds `tombstone_hashes` and changes no record. A batch that compacts writes its
//! tombstones as one page (`tombstones`, key `[time]`: arrays sort above the single records'
//! numbers) and the ids' 32-bit hashes beside it (`tombstone_hashes`, key `time`, a
//! `Uint32Array`), so a tombstone costs no index row and the store's index of pages reads
//! a few bytes per tombstone (`tombstones.rs`). Single records of version 7 stay where they
//! are, found through `by_id` until they age out. A version-7 build cannot open a version-8
//! database (its open asks for a lower version), so no build writes single records beside
//! pages.
//!
//! Versions 9 and 10 (one build: 9 was a step of its development) add `settled` and change no
//! record of the ledger. Settled operations leave the
//! working stores as they are compacted (a batch or two after they settle), whole in
//! `settled` while the policy keeps them, so an open reads no settled history. A version-8
//! build does not look there: as a tab that does not dispatch it would read an operation of
//! its own that settled and left as refused (neither stored nor queued), and tell its host so.
//! So version 10 moves the lease, as versions 4 and 6 did: `leader_lease` is deleted and the
//! lease lives in `ledger_lease`. A version-8 build (its open tab is closed by the
//! `versionchange`) then refuses the database for the missing store instead of opening it. The
//! fence starts again from 1: no holder of an older fence can open the database any more.
//! Settled operations a version-8 build left whole are compacted by this build as it runs.

use canvas_scheduler_core::json_text::quoted;
use indexed_db_futures::database::Database;
use wasm_bindgen::JsValue;
use web_sys::{IdbDatabase, IdbIndexParameters, IdbObjectStoreParameters};

use super::upgrade::{open_current, upgrade_to, UpgradeFailure};
use canvas_scheduler_core::SafeError;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 10;

/// Operation records, keyed by operation id.
pub const OPERATIONS: &str = "operations";
/// Frozen request records, keyed by request id.
pub const REQUESTS: &str = "requests";
/// The single lease record, keyed [`LEASE_KEY`].
pub const LEASE: &str = "ledger_lease";
/// Where versions 6 to 9 kept the lease (deleted by the upgrade to 10).
pub const V6_LEASE: &str = "leader_lease";
/// Where versions 2 and 3 kept the lease (deleted by the upgrade to 4).
pub const LEGACY_LEASE: &str = "lease";
/// Where versions 4 and 5 kept the lease (deleted by the upgrade to 6).
pub const V4_LEASE: &str = "dispatcher_lease";
/// Event log pages (one per persisted batch, keyed by the page's last `seq`, a number); an
/// earlier build's single event records, keyed by their `seq`, load beside them.
pub const EVENTS: &str = "events";
/// Operation pages (the JSON text of the operations a batch wrote first, as UTF-8 bytes in
/// `json` — a string in pages of earlier builds — and their ids, in `ids`), keyed by page
/// number.
pub const OPERATION_PAGES: &str = "operation_pages";
/// The multi-entry index of [`OPERATION_PAGES`] on `ids`: which page holds an operation.
pub const BY_OPERATION: &str = "by_operation";
/// Upload blobs with their metadata, keyed by blob id.
pub const BLOBS: &str = "blobs";
/// Where versions 1–4 kept ledger meta (deleted by the upgrade to 5).
pub const META: &str = "meta";
/// Records set aside by the loader, keyed `"{store}/{key}"`.
pub const QUARANTINE: &str = "quarantine";

/// Tombstones of compacted operations (`canvas_scheduler_core::retention`), keys growing with time
/// (deleting by age is a key-range delete): pages keyed `[time]` (the newest tombstone key in
/// the page), values the JSON text of their tombstones; below them, version 7's single records
/// keyed by a number, values `{ id, json }`.
pub const TOMBSTONES: &str = "tombstones";
/// The index of [`TOMBSTONES`] on `id`: single records (version 7) are looked up by id.
pub const BY_ID: &str = "by_id";
/// The id hashes of each tombstone page (a `Uint32Array`), keyed by the page's time;
/// `apply.rs` trims it with the pages.
pub const TOMBSTONE_HASHES: &str = "tombstone_hashes";

/// The archive (`canvas_scheduler_core::retention`): settled operations kept whole by the policy, each
/// the JSON text of its record, keyed by its tombstone's key (a number growing with time, so
/// trimming by age is a key-range delete). Read only by look-ups (`known(ids)`).
pub const SETTLED: &str = "settled";

/// Intents written by tabs that do not dispatch, keyed by an auto-increment number.
pub const INBOX: &str = "inbox";

/// Key of the lease record.
pub const LEASE_KEY: &str = "lease";

/// The stores each version adds, in order; the lease stores of versions 2, 4 and 6 are left
/// out (an upgrade deletes them, never creates them).
const STEPS: [&[&str]; 10] = [
    &[OPERATIONS, REQUESTS],
    &[EVENTS],
    &[BLOBS, QUARANTINE],
    &[INBOX],
    &[OPERATION_PAGES],
    &[],
    &[TOMBSTONES],
    &[TOMBSTONE_HASHES],
    &[SETTLED],
    &[LEASE],
];

/// Every store this build reads or writes.
pub const ALL_STORES: [&str; 11] = [
    SETTLED,
    TOMBSTONES,
    TOMBSTONE_HASHES,
    OPERATIONS,
    OPERATION_PAGES,
    REQUESTS,
    LEASE,
    EVENTS,
    BLOBS,
    QUARANTINE,
    INBOX,
];

/// Runs the upgrade steps above `old_version`, creating only stores that are missing.
fn upgrade(db: &IdbDatabase, old_version: f64) -> Result<(), JsValue> {
    let names = db.object_store_names();
    let mut existing: Vec<String> = (0..names.length())
        .filter_map(|at| names.item(at))
        .collect();
    if old_version < 4.0 && existing.iter().any(|name| name == LEGACY_LEASE) {
        db.delete_object_store(LEGACY_LEASE)?;
    }
    if old_version < 5.0 && existing.iter().any(|name| name == META) {
        db.delete_object_store(META)?;
    }
    if old_version < 6.0 && existing.iter().any(|name| name == V4_LEASE) {
        db.delete_object_store(V4_LEASE)?;
    }
    if old_version < 10.0 && existing.iter().any(|name| name == V6_LEASE) {
        db.delete_object_store(V6_LEASE)?;
    }
    for (index, stores) in STEPS.iter().enumerate() {
        let version = (index + 1) as f64;
        if old_version >= version {
            continue;
        }
        for store in stores.iter() {
            if existing.iter().any(|name| name == store) {
                continue;
            }
            if *store == INBOX {
                let parameters = IdbObjectStoreParameters::new();
                parameters.set_auto_increment(true);
                db.create_object_store_with_optional_parameters(store, &parameters)?;
            } else if *store == OPERATION_PAGES {
                let parameters = IdbIndexParameters::new();
                parameters.set_multi_entry(true);
                db.create_object_store(store)?
                    .create_index_with_str_and_optional_parameters(
                        BY_OPERATION,
                        "ids",
                        &parameters,
                    )?;
            } else if *store == TOMBSTONES {
                db.create_object_store(store)?
                    .create_index_with_str(BY_ID, "id")?;
            } else {
                db.create_object_store(store)?;
            }
            existing.push((*store).to_owned());
        }
    }
    Ok(())
}

fn has_every_store(db: &Database) -> bool {
    let existing: Vec<String> = db.object_store_names().collect();
    ALL_STORES
        .iter()
        .all(|store| existing.iter().any(|name| name == store))
}

/// Opens (creating or upgrading) the ledger database `name`.
///
/// A database already at a *newer* version (another tab runs a newer build) is opened at its
/// own version when it still has every store this build uses: versions only add stores.
///
/// # Errors
///
/// `storage_unavailable` when IndexedDB is missing, the open is refused, or a newer database
/// lacks one of our stores.
pub async fn open_database(name: &str) -> Result<Database, SafeError> {
    // The connection that ran the upgrade is closed, and the ledger opened again at the
    // version it is: a page kept in the back/forward cache with the upgrade's connection open
    // was evicted from it once another tab used the database (`tests/e2e/lifecycle.mjs`, two
    // tabs, Chromium: `IgnoreEventAndEvict`).
    let db = match upgrade_to(name, SCHEMA_VERSION, upgrade).await {
        // At our version now, or at a newer one: either way opened as it is.
        Ok(()) | Err(UpgradeFailure::Newer) => open_current(name).await?,
        Err(UpgradeFailure::Failed(error)) => {
            return Err(SafeError::new(
                "storage_unavailable",
                &format!(
                    "cannot open the ledger database: {}: {}",
                    error.code, error.message
                ),
            ))
        }
    };
    if has_every_store(&db) {
        Ok(db)
    } else {
        // IndexedDB versions are whole numbers.
        let version = db.version() as u64;
        db.close();
        Err(SafeError::new(
            "storage_unavailable",
            &format!(
                "database {} is at schema version {version} without this build's stores",
                quoted(name)
            ),
        ))
    }
}
