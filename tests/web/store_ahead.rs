//! The transaction an enqueue opens ahead of its batch ([`IdbLedger::open_ahead`]): the batch
//! made in the same turn is written in it, fenced as in its own; one made in a later turn opens
//! its own, and nothing is lost or written twice either way.

use canvas_scheduler::web::store::{schema, IdbLedger, StoreFault};
use canvas_scheduler_core::{PersistBatch, PersistFailure, PersistResult};
use wasm_bindgen_test::wasm_bindgen_test;

use std::cell::Cell;
use std::rc::Rc;

use canvas_scheduler::web::driver::Driver;
use canvas_scheduler_core::retention::RetentionPolicy;

use super::store_retention::{options, same_intent_of};
use super::store_support::{
    acquire, acquire_fence, db_name, hold_lease_store, operation, operations_batch, raw_keys,
};
use super::support::{delete_database, sleep};

#[wasm_bindgen_test]
async fn w1_a_batch_takes_the_transaction_opened_ahead_only_in_its_own_turn() {
    let name = db_name("ahead");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;

    // Same turn: the batch is written in the transaction opened ahead, and no other opens.
    let (opened, ahead) = (ledger.transactions(), ledger.batches_written_ahead());
    ledger.open_ahead();
    ledger.open_ahead(); // one is open on this database already
    let written = ledger.apply(&operations_batch(fence, 1, 2)).await;
    assert!(matches!(written, PersistResult::Done { .. }), "{written:?}");
    assert_eq!(ledger.transactions() - opened, 1);
    assert_eq!(ledger.batches_written_ahead() - ahead, 1);

    // A batch without writes (no fence: refused at the lease read) leaves it to the next
    // batch of the turn.
    let (opened, ahead) = (ledger.transactions(), ledger.batches_written_ahead());
    ledger.open_ahead();
    let unfenced = ledger.apply(&PersistBatch {
        fence: None,
        ..operations_batch(fence, 9, 1)
    });
    let next = ledger.apply(&operations_batch(fence, 6, 1));
    assert!(matches!(
        unfenced.await,
        PersistResult::Failed(PersistFailure::Fenced { .. })
    ));
    assert!(matches!(next.await, PersistResult::Done { .. }));
    assert_eq!(ledger.transactions() - opened, 2);
    assert_eq!(ledger.batches_written_ahead() - ahead, 1);

    // A later turn, the one opened ahead still waiting behind another connection's: it takes
    // no requests any more, so the batch opens its own and lands once.
    let release = hold_lease_store(&name).await;
    let (opened, ahead) = (ledger.transactions(), ledger.batches_written_ahead());
    ledger.open_ahead();
    sleep(0).await;
    let pending = ledger.apply(&operations_batch(fence, 3, 1));
    release
        .call0(&wasm_bindgen::JsValue::NULL)
        .expect("release");
    let written = pending.await;
    assert!(matches!(written, PersistResult::Done { .. }), "{written:?}");
    assert_eq!(ledger.transactions() - opened, 2);
    assert_eq!(ledger.batches_written_ahead(), ahead);

    // A stale fence is refused in a transaction opened ahead as in its own: nothing lands.
    let b = acquire(&ledger, "tab-b", 11_000).await.snapshot.lease;
    let b_fence = b.as_ref().map(|l| l.fence).expect("tab-b holds the lease");
    ledger.open_ahead();
    assert_eq!(
        ledger.apply(&operations_batch(fence, 4, 1)).await,
        PersistResult::Failed(PersistFailure::Fenced { current: b })
    );
    // An injected abort too.
    ledger.inject(StoreFault::AbortNextTransaction);
    ledger.open_ahead();
    match ledger.apply(&operations_batch(b_fence, 5, 1)).await {
        PersistResult::Failed(PersistFailure::Storage(error)) => {
            assert_eq!(error.code, "AbortError")
        }
        other => panic!("expected the injected abort, got {other:?}"),
    }
    assert_eq!(ledger.batches_written_ahead() - ahead, 2);
    assert_eq!(raw_keys(&name, schema::OPERATIONS).await.len(), 4);

    // One opened ahead and never taken commits having only read: the database still closes
    // and is deleted.
    ledger.open_ahead();
    ledger.close();
    delete_database(&name).await;
}

/// A driver on database `name`, started and held (nothing is sent), with its hold.
async fn held_driver(name: &str) -> (Driver, canvas_scheduler_core::HoldId) {
    let (driver, _) = Driver::open(
        options(name, "tab", RetentionPolicy::default()),
        None,
        false,
    )
    .await
    .expect("open");
    let hold = driver.hold().expect("hold");
    driver.start().expect("start");
    (driver, hold)
}

/// An enqueue made while a batch is being written goes into the next batch,
/// made in a later turn, so it opens no transaction ahead (one would commit having read the
/// lease only, queued between the two batches).
#[wasm_bindgen_test]
async fn w1_an_enqueue_opens_nothing_ahead_while_a_batch_is_written() {
    let name = db_name("ahead-writing");
    let (driver, hold) = held_driver(&name).await;
    let store = driver.store();
    // The first batch is held (another connection holds the lease store), so it is certainly
    // being written when the second enqueue comes.
    let release = hold_lease_store(&name).await;
    let first_done = Rc::new(Cell::new(false));
    {
        let (driver, done) = (driver.clone(), first_done.clone());
        wasm_bindgen_futures::spawn_local(async move {
            driver
                .enqueue(vec![same_intent_of(&operation("first", 1))])
                .await
                .expect("first");
            done.set(true);
        });
    }
    let mut waited = 0;
    while !driver.inspect(|s, _| s.is_writing()) && !first_done.get() && waited < 500 {
        sleep(1).await;
        waited += 1;
    }
    assert!(
        driver.inspect(|s, _| s.is_writing()),
        "the first batch is being written"
    );
    let before = store.transactions();
    driver.open_ahead();
    let second = driver.enqueue(vec![same_intent_of(&operation("second", 2))]);
    release
        .call0(&wasm_bindgen::JsValue::NULL)
        .expect("release");
    second.await.expect("second");
    let mut waited = 0;
    while !first_done.get() && waited < 500 {
        sleep(2).await;
        waited += 1;
    }
    assert!(first_done.get());
    assert_eq!(
        store.transactions() - before,
        1,
        "the second batch's own transaction, nothing opened ahead"
    );
    assert_eq!(
        driver.inspect(|s, _| s.ledger().operation_count()),
        2,
        "both stored"
    );
    driver.release(hold);
    driver.stop();
    delete_database(&name).await;
}

/// An enqueue made as soon as the one before it is durable (its promise resolved)
/// goes into the next batch, even when that batch was already due when the first became
/// durable (an enqueue made meanwhile): the commit waits for the microtasks to drain.
#[wasm_bindgen_test]
async fn w1_an_enqueue_made_when_the_one_before_is_durable_joins_the_next_batch() {
    let name = db_name("ahead-next-batch");
    let (driver, hold) = held_driver(&name).await;
    // Whatever start writes is durable first.
    driver
        .enqueue(vec![same_intent_of(&operation("first", 1))])
        .await
        .expect("first");
    assert!(!driver.inspect(|s, _| s.is_writing()));
    let store = driver.store();
    let before = store.transactions();
    // A's write is held (another connection holds the lease store), so it is certainly being
    // written when B comes.
    let release = hold_lease_store(&name).await;
    let done = Rc::new(Cell::new(0));
    // A, then C as soon as A is durable.
    {
        let (driver, done) = (driver.clone(), done.clone());
        wasm_bindgen_futures::spawn_local(async move {
            driver
                .enqueue(vec![same_intent_of(&operation("a", 2))])
                .await
                .expect("a");
            driver
                .enqueue(vec![same_intent_of(&operation("c", 4))])
                .await
                .expect("c");
            done.set(done.get() + 1);
        });
    }
    let mut waited = 0;
    while !driver.inspect(|s, _| s.is_writing()) && waited < 500 {
        sleep(1).await;
        waited += 1;
    }
    assert!(
        driver.inspect(|s, _| s.is_writing()),
        "A's batch is being written"
    );
    // B while A's batch is written: the next batch is due when A's is done.
    {
        let (driver, done) = (driver.clone(), done.clone());
        wasm_bindgen_futures::spawn_local(async move {
            driver
                .enqueue(vec![same_intent_of(&operation("b", 3))])
                .await
                .expect("b");
            done.set(done.get() + 1);
        });
    }
    sleep(5).await;
    assert!(
        driver.inspect(|s, _| s.is_writing()),
        "A's batch is still held"
    );
    release
        .call0(&wasm_bindgen::JsValue::NULL)
        .expect("release");
    let mut waited = 0;
    while done.get() < 2 && waited < 500 {
        sleep(2).await;
        waited += 1;
    }
    assert_eq!(done.get(), 2, "A, B and C durable");
    assert_eq!(
        store.transactions() - before,
        2,
        "A's batch, then one with B and C"
    );
    driver.release(hold);
    driver.stop();
    delete_database(&name).await;
}
