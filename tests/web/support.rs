//! Test helpers: unique database names, raw database setup and cleanup.

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;

/// A database name no other test (or earlier run) uses.
pub fn unique_name(test: &str) -> String {
    let random = (js_sys::Math::random() * 1e12) as u64;
    format!("canvas-scheduler-test:{test}:{random}")
}

/// Creates `name` at `version`, with `stores` created on upgrade, and closes it.
pub async fn create_database(name: &str, version: u32, stores: &'static [&'static str]) {
    let db = Database::open(name)
        .with_version(version)
        .with_on_upgrade_needed(move |_, db| {
            for store in stores {
                db.create_object_store(store).build()?;
            }
            Ok(())
        })
        .await
        .expect("test setup: open database");
    db.close();
}

/// Deletes `name`; tests call it last so reruns start clean.
pub async fn delete_database(name: &str) {
    Database::delete_by_name(name)
        .expect("test cleanup: delete request")
        .await
        .expect("test cleanup: delete database");
}
