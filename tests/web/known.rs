//! `known(ids)` through a drag and its compaction, in IndexedDB: records moved a frame at a
//! time with coalescing and batching, sent through a transport that answers at once, and
//! `known()` of every id so far asked again and again, its read racing the batches that send,
//! settle and compact. Memory keeps few tombstones, so nearly every answer is read from
//! storage and each batch that compacts pushes some out of memory while a read is under way.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use canvas_scheduler::web::driver::{Driver, DriverOptions};
use canvas_scheduler::web::js_transport::JsTransport;
use canvas_scheduler_core::{
    intent::IntentInput, retention::RetentionPolicy, BatchLimits, Known, SchedulerConfig,
    Settlement,
};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::db_name;
use super::support::{delete_database, js, sleep};

const RECORDS: usize = 60;
const VERSIONS: usize = 12;
/// Tombstones memory keeps (4,096 in a real session: a drag of 2,000 records passes it).
const MEMORY: usize = 16;

fn version(run: &str, record: usize, version: usize) -> IntentInput {
    IntentInput {
        id: format!("{run}-s{record}-v{version}"),
        sequence: None,
        operation_type: "shape.upsert".into(),
        canvas_ids: vec![format!("{run}-page{}", record % 4)],
        dependencies: Vec::new(),
        payload: serde_json::json!({ "x": version }).into(),
        expected_versions: None,
        run_id: None,
        coalesce_key: Some(format!("shape:{record}")),
        blob: None,
    }
}

fn options(database: &str, run: &str) -> DriverOptions {
    let answer = "async () => { await new Promise((r) => setTimeout(r, 2)); return { outcome: 'applied' }; }";
    DriverOptions {
        database: database.to_owned(),
        endpoint: "http://127.0.0.1:9".to_owned(),
        attempt_timeout_ms: 10_000,
        max_answer_bytes: canvas_scheduler::web::transport::DEFAULT_MAX_ANSWER_BYTES,
        load_page_size: 100,
        config: SchedulerConfig {
            concurrency: 4,
            owner: format!("tab-{run}"),
            batch: BatchLimits {
                max_operations: 32,
                ..BatchLimits::default()
            },
            coalesce_ms: 32,
            // The archive keeps 50 whole: the rest answer as tombstones.
            retain: RetentionPolicy {
                settled: 50,
                ..RetentionPolicy::default()
            },
            ..SchedulerConfig::default()
        },
        host: Default::default(),
        send_hooks: Default::default(),
        js_transport: Some(JsTransport {
            submit: js(answer).unchecked_into(),
            query: js(answer).unchecked_into(),
        }),
    }
}

/// What went wrong, and how much was asked.
#[derive(Default)]
struct Tally {
    look_ups: usize,
    /// Acknowledged ids `known()` did not answer.
    unknown: BTreeSet<String>,
    /// Ids `known()` had just answered that `operation(id)` or `explain(id)` did not.
    not_at_hand: BTreeSet<String>,
    /// Compacted ids discarded without the version that replaced them, and with it.
    unnamed: BTreeSet<String>,
    named: usize,
}

impl Tally {
    /// `known()` of every id in `asked`: each of `acknowledged` must be answered.
    fn check(
        &mut self,
        asked: &[String],
        answers: &[Option<Known>],
        acknowledged: &BTreeSet<String>,
    ) {
        self.look_ups += 1;
        for (id, answer) in asked.iter().zip(answers) {
            match answer {
                None if acknowledged.contains(id) => {
                    self.unknown.insert(id.clone());
                }
                Some(Known::Tombstone(t)) if t.outcome == Settlement::Discarded => {
                    // Coalesced away: it names the next version of its record.
                    let (record, v) = id.rsplit_once("-v").expect("a version id");
                    let next = format!("{record}-v{}", v.parse::<usize>().expect("n") + 1);
                    if t.replaced_by.as_deref() == Some(next.as_str()) {
                        self.named += 1;
                    } else {
                        self.unnamed.insert(id.clone());
                    }
                }
                _ => {}
            }
        }
    }
}

/// `known()` calls under way and answered: each with the ids it asked, those acknowledged
/// durable before it began, and, once answered, its answers.
type Asked = Rc<RefCell<Vec<(Vec<String>, BTreeSet<String>, Option<Vec<Option<Known>>>)>>>;

/// Begins `driver.known(ids)` in the background (the next microtask); its answer lands in
/// `asked`.
fn ask(driver: &Driver, ids: &[String], acknowledged: &BTreeSet<String>, asked: &Asked) {
    let at = asked.borrow().len();
    asked
        .borrow_mut()
        .push((ids.to_vec(), acknowledged.clone(), None));
    let (driver, ids, asked) = (driver.clone(), ids.to_vec(), asked.clone());
    wasm_bindgen_futures::spawn_local(async move {
        let answers = driver.known(ids).await.expect("known");
        asked.borrow_mut()[at].2 = Some(answers);
    });
}

#[wasm_bindgen_test]
async fn known_answers_every_id_through_a_drag_and_its_compaction() {
    let run = format!("{}{}", crate::EXPECTED_GLOBAL, js_sys::Date::now() as u64);
    let name = db_name("known-drag");
    let (driver, quarantined) = Driver::open(options(&name, &run), None, false)
        .await
        .expect("open");
    assert!(quarantined.is_empty());
    driver.set_memory_limit(MEMORY);
    driver.start().expect("start");
    let mut ids: Vec<String> = Vec::new();
    let acknowledged: Rc<RefCell<BTreeSet<String>>> = Rc::default();
    let asked: Asked = Rc::default();
    // The drag: a move a frame, none waiting for the last to be durable, and a known() of
    // every id so far begun with each, under way while moves are written, sent and settled.
    for v in 0..VERSIONS {
        let intents: Vec<IntentInput> = (0..RECORDS).map(|r| version(&run, r, v)).collect();
        let moved: Vec<String> = intents.iter().map(|i| i.id.clone()).collect();
        ids.extend(moved.iter().cloned());
        {
            let (driver, acknowledged) = (driver.clone(), acknowledged.clone());
            wasm_bindgen_futures::spawn_local(async move {
                driver.enqueue(intents).await.expect("durable");
                acknowledged.borrow_mut().extend(moved);
            });
        }
        ask(&driver, &ids, &acknowledged.borrow(), &asked);
        sleep(16).await;
    }
    // Then everything is sent, settled and compacted, a known() of every id begun every few
    // ms, and the synchronous calls asked of what a known() of a few ids just answered.
    let mut not_at_hand: BTreeSet<String> = BTreeSet::new();
    let mut at = 0;
    for _ in 0..400 {
        ask(&driver, &ids, &acknowledged.borrow(), &asked);
        let chunk: Vec<String> = (0..MEMORY)
            .map(|i| ids[(at + i) % ids.len()].clone())
            .collect();
        at += MEMORY;
        let _ = driver.known(chunk.clone()).await.expect("known");
        for id in &chunk {
            let answered =
                driver.inspect(|s, now| (s.known(id).is_some(), s.explain(now, id).is_ok()));
            if answered != (true, true) {
                not_at_hand.insert(id.clone());
            }
        }
        let (pending, tombstones) = driver.inspect(|s, _| {
            let stats = s.stats();
            (stats.pending, stats.tombstones)
        });
        let all_durable = acknowledged.borrow().len() == ids.len();
        if all_durable && pending == 0 && tombstones as usize >= ids.len() - RECORDS {
            break;
        }
        sleep(5).await;
    }
    for _ in 0..1_000 {
        if asked
            .borrow()
            .iter()
            .all(|(_, _, answers)| answers.is_some())
        {
            break;
        }
        sleep(5).await;
    }
    let tombstones = driver.inspect(|s, _| s.stats().tombstones) as usize;
    driver.stop();
    delete_database(&name).await;
    let mut tally = Tally {
        not_at_hand,
        ..Tally::default()
    };
    for (asked_ids, before, answers) in asked.borrow().iter() {
        let answers = answers.as_ref().expect("every known() answered");
        tally.check(asked_ids, answers, before);
    }
    assert!(
        tombstones >= ids.len() - RECORDS && tombstones > 8 * MEMORY,
        "{tombstones} of {} compacted",
        ids.len()
    );
    assert!(tally.named > 0, "compacted replaced versions were answered");
    assert!(
        tally.unknown.is_empty() && tally.not_at_hand.is_empty() && tally.unnamed.is_empty(),
        "{} look-ups of up to {} ids: known() missed {} (e.g. {:?}); operation()/explain() \
         missed {} just answered (e.g. {:?}); {} compacted replaced versions named no \
         replacement (e.g. {:?})",
        tally.look_ups,
        ids.len(),
        tally.unknown.len(),
        tally.unknown.first(),
        tally.not_at_hand.len(),
        tally.not_at_hand.first(),
        tally.unnamed.len(),
        tally.unnamed.first(),
    );
}
