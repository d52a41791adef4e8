//! canal's channel benchmark, Rust peers: crossbeam-channel and flume.
//!
//! The same workloads as bench/chan/chanbench-canal.c and the Go peer
//! (bench/peers/go/cmd/chanbench); see docs/bench-chan.md. One line per
//! result, in crossbeam-channel's benchmark format:
//!
//!     bounded1_spsc Rust crossbeam-channel 0.123456 sec
//!
//! Usage: chanbench-rust [-n N] [-t T] [-s 0|8|64] [-w KIND,..] [-c CAP,..]
//!                       [-i crossbeam|flume|all] [-x]
//! CAP is 0, 1, N (capacity N) or u (unbounded).
//!
//! flume's Selector hangs (lost wake-up) in select_both at capacity 0 and 1
//! with several selecting senders and receivers (flume issues #44 and #135);
//! those two cells are skipped, with a note on stderr, unless -x is given.

use std::process::exit;
use std::thread;
use std::time::Instant;

/// A message of a fixed size, built from its sequence number.
trait Msg: Copy + Send + Sync + 'static {
    fn new(i: usize) -> Self;
}

impl Msg for () {
    #[inline]
    fn new(_: usize) -> Self {}
}

impl Msg for [u64; 1] {
    #[inline]
    fn new(i: usize) -> Self {
        [i as u64]
    }
}

impl Msg for [u64; 8] {
    #[inline]
    fn new(i: usize) -> Self {
        [i as u64; 8]
    }
}

/// One channel implementation. The select loops are per implementation
/// because the two crates' select APIs differ (crossbeam's Select is built
/// once and reused; flume's Selector is consumed by each wait()).
trait Flavor {
    const NAME: &'static str;
    /// select_both at capacity 0 and 1 is known to hang (see the top).
    const SELECT_BOTH_HANGS_SMALL: bool = false;
    type Tx<M: Msg>: Clone + Send + Sync;
    type Rx<M: Msg>: Clone + Send + Sync;
    fn new<M: Msg>(cap: Option<usize>) -> (Self::Tx<M>, Self::Rx<M>);
    fn send<M: Msg>(tx: &Self::Tx<M>, m: M);
    fn recv<M: Msg>(rx: &Self::Rx<M>) -> M;
    /// Receive `count` messages, each from whichever of `rxs` is ready.
    fn select_recv_loop<M: Msg>(rxs: &[Self::Rx<M>], count: usize);
    /// Send `count` messages, each on whichever of `txs` is ready.
    fn select_send_loop<M: Msg>(txs: &[Self::Tx<M>], count: usize);
}

struct Crossbeam;

impl Flavor for Crossbeam {
    const NAME: &'static str = "crossbeam-channel";
    type Tx<M: Msg> = crossbeam_channel::Sender<M>;
    type Rx<M: Msg> = crossbeam_channel::Receiver<M>;

    fn new<M: Msg>(cap: Option<usize>) -> (Self::Tx<M>, Self::Rx<M>) {
        match cap {
            Some(c) => crossbeam_channel::bounded(c),
            None => crossbeam_channel::unbounded(),
        }
    }

    #[inline]
    fn send<M: Msg>(tx: &Self::Tx<M>, m: M) {
        tx.send(m).expect("send on a closed channel");
    }

    #[inline]
    fn recv<M: Msg>(rx: &Self::Rx<M>) -> M {
        rx.recv().expect("recv on a closed channel")
    }

    fn select_recv_loop<M: Msg>(rxs: &[Self::Rx<M>], count: usize) {
        let mut sel = crossbeam_channel::Select::new();
        for rx in rxs {
            sel.recv(rx);
        }
        for _ in 0..count {
            let op = sel.select();
            let i = op.index();
            op.recv(&rxs[i]).expect("recv on a closed channel");
        }
    }

    fn select_send_loop<M: Msg>(txs: &[Self::Tx<M>], count: usize) {
        let mut sel = crossbeam_channel::Select::new();
        for tx in txs {
            sel.send(tx);
        }
        for i in 0..count {
            let op = sel.select();
            let k = op.index();
            op.send(&txs[k], M::new(i))
                .expect("send on a closed channel");
        }
    }
}

struct Flume;

impl Flavor for Flume {
    const NAME: &'static str = "flume";
    const SELECT_BOTH_HANGS_SMALL: bool = true;
    type Tx<M: Msg> = flume::Sender<M>;
    type Rx<M: Msg> = flume::Receiver<M>;

    fn new<M: Msg>(cap: Option<usize>) -> (Self::Tx<M>, Self::Rx<M>) {
        match cap {
            Some(c) => flume::bounded(c),
            None => flume::unbounded(),
        }
    }

    #[inline]
    fn send<M: Msg>(tx: &Self::Tx<M>, m: M) {
        tx.send(m).expect("send on a closed channel");
    }

    #[inline]
    fn recv<M: Msg>(rx: &Self::Rx<M>) -> M {
        rx.recv().expect("recv on a closed channel")
    }

    fn select_recv_loop<M: Msg>(rxs: &[Self::Rx<M>], count: usize) {
        for _ in 0..count {
            let mut sel = flume::Selector::new();
            for rx in rxs {
                sel = sel.recv(rx, |r| r.expect("recv on a closed channel"));
            }
            let _: M = sel.wait();
        }
    }

    fn select_send_loop<M: Msg>(txs: &[Self::Tx<M>], count: usize) {
        for i in 0..count {
            let m = M::new(i);
            let mut sel = flume::Selector::new();
            for tx in txs {
                sel = sel.send(tx, m, |r| r.expect("send on a closed channel"));
            }
            sel.wait();
        }
    }
}

/// The workload kinds, in output order.
const KINDS: [&str; 7] = [
    "seq",
    "spsc",
    "mpsc",
    "mpmc",
    "select_rx",
    "select_both",
    "ping_pong",
];

#[derive(Clone, Copy, PartialEq)]
enum Cap {
    Zero,
    One,
    N,
    Unbounded,
}

impl Cap {
    fn name(self) -> &'static str {
        match self {
            Cap::Zero => "bounded0",
            Cap::One => "bounded1",
            Cap::N => "boundedN",
            Cap::Unbounded => "unbounded",
        }
    }
    fn value(self, n: usize) -> Option<usize> {
        match self {
            Cap::Zero => Some(0),
            Cap::One => Some(1),
            Cap::N => Some(n),
            Cap::Unbounded => None,
        }
    }
}

struct Config {
    n: usize,
    t: usize,
    size: usize,
    kinds: Vec<String>,
    caps: Vec<Cap>,
    flavors: Vec<String>,
    run_hanging: bool,
}

/// seq: one thread sends a chunk of min(capacity, N) messages, then receives
/// them, until N messages went through (capacity N or unbounded: one chunk,
/// as in crossbeam's suite). Impossible at capacity 0.
fn seq<F: Flavor, M: Msg>(cap: Option<usize>, n: usize) {
    let (tx, rx) = F::new::<M>(cap);
    let chunk = cap.unwrap_or(n).min(n).max(1);
    let mut done = 0;
    while done < n {
        let k = chunk.min(n - done);
        for i in 0..k {
            F::send(&tx, M::new(done + i));
        }
        for _ in 0..k {
            F::recv(&rx);
        }
        done += k;
    }
}

fn spsc<F: Flavor, M: Msg>(cap: Option<usize>, n: usize) {
    let (tx, rx) = F::new::<M>(cap);
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..n {
                F::send(&tx, M::new(i));
            }
        });
        for _ in 0..n {
            F::recv(&rx);
        }
    });
}

fn mpsc<F: Flavor, M: Msg>(cap: Option<usize>, n: usize, t: usize) {
    let (tx, rx) = F::new::<M>(cap);
    let per = n / t;
    thread::scope(|s| {
        for _ in 0..t {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..per {
                    F::send(&tx, M::new(i));
                }
            });
        }
        for _ in 0..per * t {
            F::recv(&rx);
        }
    });
}

fn mpmc<F: Flavor, M: Msg>(cap: Option<usize>, n: usize, t: usize) {
    let (tx, rx) = F::new::<M>(cap);
    let per = n / t;
    thread::scope(|s| {
        for _ in 0..t {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..per {
                    F::send(&tx, M::new(i));
                }
            });
        }
        for _ in 0..t {
            let rx = rx.clone();
            s.spawn(move || {
                for _ in 0..per {
                    F::recv(&rx);
                }
            });
        }
    });
}

/// The two ends of T channels.
type Ends<F, M> = (Vec<<F as Flavor>::Tx<M>>, Vec<<F as Flavor>::Rx<M>>);

fn channels<F: Flavor, M: Msg>(cap: Option<usize>, t: usize) -> Ends<F, M> {
    (0..t).map(|_| F::new::<M>(cap)).unzip()
}

fn select_rx<F: Flavor, M: Msg>(cap: Option<usize>, n: usize, t: usize) {
    let (txs, rxs) = channels::<F, M>(cap, t);
    let per = n / t;
    thread::scope(|s| {
        for tx in &txs {
            s.spawn(move || {
                for i in 0..per {
                    F::send(tx, M::new(i));
                }
            });
        }
        F::select_recv_loop(&rxs, per * t);
    });
}

fn select_both<F: Flavor, M: Msg>(cap: Option<usize>, n: usize, t: usize) {
    let (txs, rxs) = channels::<F, M>(cap, t);
    let per = n / t;
    thread::scope(|s| {
        for _ in 0..t {
            let txs = &txs;
            s.spawn(move || F::select_send_loop(txs, per));
        }
        for _ in 0..t {
            let rxs = &rxs;
            s.spawn(move || F::select_recv_loop(rxs, per));
        }
    });
}

/// ping_pong: N/2 round trips between two threads (N messages in all).
fn ping_pong<F: Flavor, M: Msg>(cap: Option<usize>, n: usize) {
    let (tx1, rx1) = F::new::<M>(cap);
    let (tx2, rx2) = F::new::<M>(cap);
    let rounds = n / 2;
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..rounds {
                let m = F::recv(&rx1);
                F::send(&tx2, m);
            }
        });
        for i in 0..rounds {
            F::send(&tx1, M::new(i));
            F::recv(&rx2);
        }
    });
}

fn run_one<F: Flavor, M: Msg>(kind: &str, cap: Cap, cfg: &Config) {
    if kind == "seq" && cap == Cap::Zero {
        return; // a single thread cannot rendezvous with itself
    }
    if F::SELECT_BOTH_HANGS_SMALL
        && kind == "select_both"
        && matches!(cap, Cap::Zero | Cap::One)
        && !cfg.run_hanging
    {
        eprintln!(
            "chanbench-rust: skipping {}_{} for {}: its select hangs there (-x runs it)",
            cap.name(),
            kind,
            F::NAME
        );
        return;
    }
    let c = cap.value(cfg.n);
    let (n, t) = (cfg.n, cfg.t);
    let start = Instant::now();
    match kind {
        "seq" => seq::<F, M>(c, n),
        "spsc" => spsc::<F, M>(c, n),
        "mpsc" => mpsc::<F, M>(c, n, t),
        "mpmc" => mpmc::<F, M>(c, n, t),
        "select_rx" => select_rx::<F, M>(c, n, t),
        "select_both" => select_both::<F, M>(c, n, t),
        "ping_pong" => ping_pong::<F, M>(c, n),
        _ => unreachable!(),
    }
    let secs = start.elapsed().as_secs_f64();
    let suffix = if cfg.size == 8 {
        String::new()
    } else {
        format!("_{}B", cfg.size)
    };
    println!(
        "{}_{}{} Rust {} {:.6} sec",
        cap.name(),
        kind,
        suffix,
        F::NAME,
        secs
    );
}

fn run_flavor<F: Flavor>(cfg: &Config) {
    for kind in KINDS.iter().filter(|k| cfg.kinds.iter().any(|x| x == *k)) {
        for &cap in &cfg.caps {
            match cfg.size {
                0 => run_one::<F, ()>(kind, cap, cfg),
                8 => run_one::<F, [u64; 1]>(kind, cap, cfg),
                _ => run_one::<F, [u64; 8]>(kind, cap, cfg),
            }
        }
    }
}

fn usage(msg: &str) -> ! {
    eprintln!("chanbench-rust: {msg}");
    eprintln!(
        "usage: chanbench-rust [-n N] [-t T] [-s 0|8|64] [-w KIND,..] [-c 0,1,N,u] \
         [-i crossbeam|flume|all] [-x]\nkinds: {}",
        KINDS.join(",")
    );
    exit(2);
}

fn parse_args() -> Config {
    let mut cfg = Config {
        n: 1_000_000,
        t: 4,
        size: 8,
        kinds: KINDS.iter().map(|s| s.to_string()).collect(),
        caps: vec![Cap::Zero, Cap::One, Cap::N, Cap::Unbounded],
        flavors: vec!["crossbeam".into(), "flume".into()],
        run_hanging: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            usage("help");
        }
        if flag == "-x" {
            cfg.run_hanging = true;
            continue;
        }
        let val = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let num = || -> usize {
            val.parse()
                .unwrap_or_else(|_| usage(&format!("bad number for {flag}: {val}")))
        };
        match flag.as_str() {
            "-n" => cfg.n = num(),
            "-t" => cfg.t = num(),
            "-s" => cfg.size = num(),
            "-w" => cfg.kinds = val.split(',').map(str::to_string).collect(),
            "-c" => {
                cfg.caps = val
                    .split(',')
                    .map(|c| match c {
                        "0" => Cap::Zero,
                        "1" => Cap::One,
                        "N" => Cap::N,
                        "u" => Cap::Unbounded,
                        _ => usage(&format!("bad capacity {c}")),
                    })
                    .collect()
            }
            "-i" => {
                cfg.flavors = match val.as_str() {
                    "all" => vec!["crossbeam".into(), "flume".into()],
                    "crossbeam" | "flume" => vec![val.clone()],
                    _ => usage(&format!("bad implementation {val}")),
                }
            }
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    if cfg.n < 2 || cfg.t < 1 || cfg.n < cfg.t {
        usage("need N >= 2, T >= 1 and N >= T");
    }
    if ![0, 8, 64].contains(&cfg.size) {
        usage("message size must be 0, 8 or 64");
    }
    if let Some(k) = cfg.kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
        usage(&format!("unknown workload {k}"));
    }
    cfg
}

fn main() {
    let cfg = parse_args();
    for f in &cfg.flavors {
        match f.as_str() {
            "crossbeam" => run_flavor::<Crossbeam>(&cfg),
            _ => run_flavor::<Flume>(&cfg),
        }
    }
}
