// Curator peer for the zklock contention benchmark (see bench/peers/README.md).
//
// N contenders, each with its own CuratorFramework (= its own ZooKeeper session) and its own
// thread, acquire and release one InterProcessMutex at PATH M times each, all in this one JVM.
// Prints ONE line of key=value pairs on stdout (same keys as zklock-bench); --json FILE writes
// the same keys as a flat JSON object. Diagnostics go to stderr. Exit 1 on any violation.
// --kind shared (--readers R --writers W): InterProcessReadWriteLock; --kind semaphore
// (--leases L): InterProcessSemaphoreV2; same workload and keys as zklock-bench's kinds.
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

public final class CuratorBench {
  private static final int NONE = -1;

  // shared in-process "resource" and handoff bookkeeping
  private static final AtomicInteger holder = new AtomicInteger(NONE);
  private static final AtomicInteger violations = new AtomicInteger();
  private static final AtomicInteger acquisitions = new AtomicInteger();
  // {release start (System.nanoTime), releasing contender} or null when no release is pending
  private static final AtomicReference<long[]> pendingRelease = new AtomicReference<>();
  private static final List<Double> handoffs = new ArrayList<>();

  private static final String USAGE = "--connect HOSTS --path PATH --contenders N --cycles M [--hold-us U] [--json FILE]"
      + " [--cdf FILE] [--kind mutex|shared|semaphore|distinct-keys|busy-process] [--readers R] [--writers W]"
      + " [--leases L] [--warmup-cycles W] [--log FILE --ready FILE --go FILE] [--timeout-s S] [--drain-releases M]";

  public static void main(String[] args) {
    PeerSupport.main("CuratorBench", USAGE, args, CuratorBench::run);
  }

  private static void run(PeerSupport.Args a) throws Exception {
    String connect = a.str("--connect", "127.0.0.1:2181"), path = a.str("--path", "/zklock-bench/lock");
    String jsonFile = a.str("--json", null), cdfFile = a.str("--cdf", null), kind = a.str("--kind", "mutex");
    String logFile = a.str("--log", null), readyFile = a.str("--ready", null), goFile = a.str("--go", null);
    int contenders = a.integer("--contenders", 8), cycles = a.integer("--cycles", 100);
    int readers = a.integer("--readers", 4), writers = a.integer("--writers", 1), leases = a.integer("--leases", 2);
    long holdUs = a.whole("--hold-us", 0);
    int warmupCycles = a.integer("--warmup-cycles", 0);
    long timeoutS = a.whole("--timeout-s", 300);  // --kind depth
    long drainReleases = a.whole("--drain-releases", 0);  // --kind depth
    a.done();
    if (contenders < 1 || cycles < 1) PeerSupport.usage("--contenders and --cycles must be >= 1");
    if (kind.equals("shared")) { runShared(connect, path, readers, writers, cycles, holdUs * 1000, jsonFile); return; }
    if (kind.equals("semaphore")) { runSemaphore(connect, path, contenders, leases, cycles, warmupCycles, holdUs * 1000, jsonFile); return; }
    if (kind.equals("distinct-keys")) { runDistinctKeys(connect, path, contenders, cycles, jsonFile); return; }
    if (kind.equals("depth")) { runDepth(connect, path, contenders, timeoutS, drainReleases, jsonFile); return; }
    if (kind.equals("busy-process")) { runBusyProcess(connect, path, contenders, cycles, holdUs * 1000, logFile, readyFile, goFile); return; }
    if (!kind.equals("mutex")) PeerSupport.usage("--kind is mutex, shared, semaphore, distinct-keys or busy-process");
    final int soloCycles = Math.max(50, cycles);

    int threadsPeak = threadCount();
    List<CuratorFramework> clients = connectAll(connect, contenders);

    // solo: one contender, uncontended
    double[] solo = new double[soloCycles];
    {
      InterProcessMutex m = new InterProcessMutex(clients.get(0), path);
      for (int k = 0; k < soloCycles; ++k) {
        long t0 = System.nanoTime();
        m.acquire();
        m.release();
        solo[k] = (System.nanoTime() - t0) / 1e3;
      }
    }
    threadsPeak = Math.max(threadsPeak, threadCount());

    final String lockPath = path;
    final int nCycles = cycles;
    final long holdNs = holdUs * 1000;
    final List<InterProcessMutex> mutexes = new ArrayList<>();
    for (CuratorFramework c : clients) mutexes.add(new InterProcessMutex(c, lockPath));
    Contended run = runContended(clients, threadsPeak, me -> {
      InterProcessMutex m = mutexes.get(me);
      for (int k = 0; k < nCycles; ++k) {
        m.acquire();
        long now = System.nanoTime();
        long[] rel = pendingRelease.getAndSet(null);
        if (rel != null && rel[1] != me) {
          synchronized (handoffs) { handoffs.add((now - rel[0]) / 1e3); }
        }
        if (!holder.compareAndSet(NONE, me)) violations.incrementAndGet();
        acquisitions.incrementAndGet();
        if (holdNs > 0) {
          long until = System.nanoTime() + holdNs;
          while (System.nanoTime() < until) Thread.onSpinWait();
        }
        if (!holder.compareAndSet(me, NONE)) { violations.incrementAndGet(); holder.set(NONE); }
        pendingRelease.set(new long[] {System.nanoTime(), me});
        m.release();
      }
    });

    double[] h;
    synchronized (handoffs) { h = PeerSupport.toArray(handoffs); }
    int acq = acquisitions.get();
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("contenders", Integer.toString(contenders));
    r.put("cycles", Integer.toString(cycles));
    r.put("acquisitions", Integer.toString(acq));
    r.put("throughput", PeerSupport.fmt(acq / run.seconds(0, contenders)));
    r.put("handoff_p50_us", PeerSupport.fmt(PeerSupport.percentile(h, 50)));
    r.put("handoff_p90_us", PeerSupport.fmt(PeerSupport.percentile(h, 90)));
    r.put("handoff_p99_us", PeerSupport.fmt(PeerSupport.percentile(h, 99)));
    r.put("handoff_p999_us", PeerSupport.fmt(PeerSupport.percentile(h, 99.9)));
    r.put("handoff_max_us", PeerSupport.fmt(PeerSupport.percentile(h, 100)));
    r.put("handoffs", Integer.toString(h.length));
    r.put("solo_cycle_us", PeerSupport.fmt(PeerSupport.percentile(solo, 50)));
    r.put("violations", Integer.toString(violations.get()));
    putProcessFigures(r, run, acq);
    PeerSupport.emit(r, jsonFile);
    PeerSupport.writeCdf(cdfFile, h);
    System.exit(violations.get() == 0 ? 0 : 1);
  }

  // One contender's loop; me is its index (its client, its role).
  private interface Contender { void run(int me) throws Exception; }

  // What every contended run measures besides its recipe's own figures.
  private static final class Contended {
    double[] finishedS;  // per contender: seconds from the common start to its last release
    double cpuS;         // process CPU over the contended phase
    int threadsPeak;
    // from the start to the last finish of contenders [from, to)
    double seconds(int from, int to) {
      double m = Double.NaN;
      for (int i = from; i < to; ++i) m = Double.isNaN(m) ? finishedS[i] : Math.max(m, finishedS[i]);
      return m;
    }
  }

  // the mutex and recipe kinds' sessions: 30 s, as zklock-bench's
  // --kind depth: N waiters (--contenders) on one path from ONE session, behind a holder of the
  // same session; all start at once (a thread each: InterProcessMutex.acquire blocks), then the
  // holder releases and each grant releases at once. The keys of zklock-depth-bench (no request
  // or event counts: Curator has none to read). A waiter's failure is printed as it happens
  // (stderr) and ends the run with ok=0 and its message. So does the ZooKeeper client's refusal of
  // a reply over jute.maxbuffer (1 MB: a listing of about 17,800 of these names), which it logs
  // and answers with a reconnect (the waiters only see ConnectionLoss, and retry): run with the
  // slf4j-jdk14 binding (run.sh under ZKLOCK_PEER_SLF4J=jdk14, as scripts/bench's depth phase
  // does), its warnings are heard here.
  private static void runDepth(String connect, String path, int n, long timeoutS, long drainReleases, String jsonFile)
      throws Exception {
    final int measured = drainReleases > 0 && drainReleases < n ? (int) drainReleases : n;
    AtomicReference<String> failure = new AtomicReference<>();
    final long tStart = System.nanoTime();
    hearClientWarnings(failure, n, tStart);
    CuratorFramework client = connectAll(connect, 1).get(0);
    InterProcessMutex head = new InterProcessMutex(client, path);
    head.acquire();
    AtomicInteger granted = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(n);
    long deadline = System.nanoTime() + timeoutS * 1_000_000_000L;
    System.gc();
    long rss0 = rssKb("VmRSS:");
    long t0 = System.nanoTime();
    for (int i = 0; i < n; ++i) {
      Thread t = new Thread(null, () -> {
        try {
          InterProcessMutex m = new InterProcessMutex(client, path);
          if (!m.acquire(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), java.util.concurrent.TimeUnit.MILLISECONDS))
            throw new RuntimeException("acquire timed out");
          granted.incrementAndGet();
          m.release();
        } catch (Throwable e) {
          if (failure.compareAndSet(null, e.toString()))
            PeerSupport.say(String.format(java.util.Locale.ROOT, "depth %d: a waiter failed after %.1f s: %s", n,
                (System.nanoTime() - t0) / 1e9, e));
        } finally {
          done.countDown();
        }
      }, "waiter-" + i, 256 * 1024);
      t.setDaemon(true);
      t.start();
    }
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("waiters", Integer.toString(n));
    // queued: every node made (the holder's and N)
    // (the raw handle, every 5 ms, on a thread of its own: a stat waits behind every listing ahead
    // of it on the one connection, and Curator's retries would block for a minute while the server
    // is gone; a lost connection decides nothing, the waiters and the deadline do)
    final org.apache.zookeeper.ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
    final AtomicInteger seen = new AtomicInteger(-1);
    Thread look = new Thread(() -> {
      while (seen.get() < n + 1 && failure.get() == null) {
        try {
          org.apache.zookeeper.data.Stat st = zk.exists(path, false);
          if (st != null) seen.set(st.getNumChildren());
          Thread.sleep(5);
        } catch (org.apache.zookeeper.KeeperException e) {
          // connection loss: look again
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "depth-look");
    look.setDaemon(true);
    look.start();
    while (seen.get() < n + 1 && failure.get() == null && System.nanoTime() <= deadline) Thread.sleep(5);
    final int lastSeen = seen.get();
    long t1 = System.nanoTime();
    if (failure.get() == null && lastSeen < n + 1)
      failure.set(String.format(java.util.Locale.ROOT, "queue: not every waiter queued within %d s", timeoutS));
    if (failure.get() == null) try {
      Thread.sleep(200);  // their listings and watches answered (a margin: Curator tells nothing)
      long rss1 = rssKb("VmRSS:");
      r.put("queue_s", String.format(java.util.Locale.ROOT, "%.3f", (t1 - t0) / 1e9));
      r.put("kb_per_waiter", PeerSupport.fmt((rss1 - rss0) / (double) n));
      long cpu0 = processCpuNanos(), t2 = System.nanoTime();
      head.release();
      while (granted.get() < measured && failure.get() == null && System.nanoTime() < deadline) Thread.sleep(2);
      long t3 = System.nanoTime(), cpu1 = processCpuNanos();
      int got = granted.get();
      if (failure.get() == null && got >= measured) {
        r.put("drain_measured", Integer.toString(got));
        r.put("drain_s", String.format(java.util.Locale.ROOT, "%.3f", (t3 - t2) / 1e9));
        r.put("drain_releases_per_s", PeerSupport.fmt(got / ((t3 - t2) / 1e9)));
        r.put("cpu_us_per_release", PeerSupport.fmt((cpu1 - cpu0) / 1e3 / got));
      } else if (failure.get() == null) {
        failure.set("drain: " + got + " of " + measured + " granted");
      }
    } catch (Exception e) {  // the release's retries given up
      failure.compareAndSet(null, "drain: " + e);
    }
    if (failure.get() != null && !r.containsKey("queue_s") && lastSeen >= 0)
      r.put("children_at_failure", Integer.toString(lastSeen));  // the dir's depth at the last look before it
    r.put("ok", failure.get() == null ? "1" : "0");
    if (failure.get() != null) r.put("error", failure.get().replaceAll("\\s+", "_"));
    PeerSupport.emit(r, jsonFile);
    System.exit(failure.get() == null ? 0 : 2);
  }

  // The ZooKeeper client's warnings through java.util.logging (when slf4j-jdk14 is the binding): one
  // line each on stderr (the first 5), and a reply refused for its length ("Packet len ... is out
  // of range", the client's jute.maxbuffer) is the run's failure.
  private static void hearClientWarnings(AtomicReference<String> failure, int n, long t0) {
    java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
    for (java.util.logging.Handler h : root.getHandlers()) root.removeHandler(h);
    root.setLevel(java.util.logging.Level.WARNING);
    AtomicInteger said = new AtomicInteger();
    root.addHandler(new java.util.logging.Handler() {
      @Override public void publish(java.util.logging.LogRecord rec) {
        if (rec.getLevel().intValue() < java.util.logging.Level.WARNING.intValue()) return;
        String cause = null;
        for (Throwable t = rec.getThrown(); t != null; t = t.getCause())
          if (t.getMessage() != null && t.getMessage().contains("out of range")) cause = t.getMessage();
        String when = String.format(java.util.Locale.ROOT, "depth %d, after %.1f s", n, (System.nanoTime() - t0) / 1e9);
        if (cause != null && failure.compareAndSet(null, "the ZooKeeper client refused a reply: " + cause))
          PeerSupport.say(when + ": the ZooKeeper client refused a reply (over jute.maxbuffer, "
              + Integer.getInteger("jute.maxbuffer", 0xfffff) + " bytes): " + cause);
        else if (said.incrementAndGet() <= 5)
          PeerSupport.say(when + ": " + rec.getLoggerName() + ": " + rec.getMessage()
              + (rec.getThrown() != null ? ": " + rec.getThrown() : ""));
      }
      @Override public void flush() {}
      @Override public void close() {}
    });
  }

  private static List<CuratorFramework> connectAll(String connect, int n) throws InterruptedException {
    return PeerSupport.connectAll(connect, n, 30_000);
  }

  // One thread per client, all started together, each running body(i); closes the clients
  // when all have finished. A failure in any contender exits with status 2.
  private static Contended runContended(List<CuratorFramework> clients, int threadsPeak, Contender body)
      throws InterruptedException {
    final int n = clients.size();
    final Contended out = new Contended();
    out.finishedS = new double[n];
    out.threadsPeak = Math.max(threadsPeak, threadCount());
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    final CountDownLatch start = new CountDownLatch(1);
    final long[] tStart = new long[1];
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < n; ++i) {
      final int me = i;
      Thread t = new Thread(() -> {
        try {
          start.await();
          body.run(me);
          out.finishedS[me] = (System.nanoTime() - tStart[0]) / 1e9;
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      }, "contender-" + i);
      threads.add(t);
      t.start();
    }
    out.threadsPeak = Math.max(out.threadsPeak, threadCount());
    tStart[0] = System.nanoTime();
    long cpuStart = processCpuNanos();
    start.countDown();
    for (Thread t : threads) {
      while (t.isAlive()) {
        t.join(50);
        out.threadsPeak = Math.max(out.threadsPeak, threadCount());
        if (failure.get() != null) break;
      }
      if (failure.get() != null) break;
    }
    out.cpuS = (processCpuNanos() - cpuStart) / 1e9;
    if (failure.get() != null) {
      System.err.println("CuratorBench: contender failed: " + failure.get());
      failure.get().printStackTrace();
      System.exit(2);
    }
    out.threadsPeak = Math.max(out.threadsPeak, threadCount());
    for (CuratorFramework c : clients) c.close();
    return out;
  }

  // --kind distinct-keys: ONE client, C threads, each taking and releasing its own
  // uncontended InterProcessMutex PATH/k<i> M times after one warm-up cycle (as zklock-bench's
  // kind): throughput, CPU per acquisition (the process's), cycle latency.
  private static void runDistinctKeys(String connect, String path, int threads, int cycles, String jsonFile)
      throws Exception {
    List<CuratorFramework> one = connectAll(connect, 1);
    CuratorFramework client = one.get(0);
    final List<InterProcessMutex> locks = new ArrayList<>();
    for (int i = 0; i < threads; ++i) locks.add(new InterProcessMutex(client, path + "/k" + i));
    final double[][] cycleUs = new double[threads][cycles];
    final CountDownLatch warm = new CountDownLatch(threads), start = new CountDownLatch(1), done = new CountDownLatch(threads);
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    final long[] lastDone = new long[1];
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; ++i) {
      final int me = i;
      Thread t = new Thread(() -> {
        try {
          InterProcessMutex m = locks.get(me);
          m.acquire();
          m.release();
          warm.countDown();
          start.await();
          for (int k = 0; k < cycles; ++k) {
            long c0 = System.nanoTime();
            m.acquire();
            m.release();
            long c1 = System.nanoTime();
            cycleUs[me][k] = (c1 - c0) / 1e3;
            synchronized (lastDone) { lastDone[0] = Math.max(lastDone[0], c1); }
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
          warm.countDown();
        } finally {
          done.countDown();
        }
      }, "key-" + i);
      ts.add(t);
      t.start();
    }
    warm.await();
    int threadsPeak = threadCount();
    long cpu0 = processCpuNanos(), t0 = System.nanoTime();
    start.countDown();
    done.await();
    long cpu1 = processCpuNanos();
    if (failure.get() != null) throw new RuntimeException(failure.get());
    double seconds = (lastDone[0] - t0) / 1e9;
    int acq = threads * cycles;
    double[] all = new double[acq];
    for (int i = 0; i < threads; ++i) System.arraycopy(cycleUs[i], 0, all, i * cycles, cycles);
    client.close();
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("kind", "distinct-keys");
    r.put("concurrency", Integer.toString(threads));
    r.put("cycles", Integer.toString(cycles));
    r.put("acquisitions", Integer.toString(acq));
    r.put("throughput", PeerSupport.fmt(acq / seconds));
    r.put("cpu_us_per_acq", PeerSupport.fmt((cpu1 - cpu0) / 1e3 / acq));
    r.put("cycle_p50_us", PeerSupport.fmt(PeerSupport.percentile(all, 50)));
    r.put("cycle_p99_us", PeerSupport.fmt(PeerSupport.percentile(all, 99)));
    r.put("seconds", String.format(java.util.Locale.ROOT, "%.3f", seconds));
    r.put("threads", Integer.toString(threadsPeak));
    r.put("rss_kb", Long.toString(rssKb("VmHWM:")));
    r.put("violations", "0");
    PeerSupport.emit(r, jsonFile);
  }

  // --kind busy-process: the busy process of zklock-bench's busy-process kind as
  // Curator has it: ONE client, T threads, an InterProcessMutex each (a node per thread),
  // each acquiring M times. Says ready (--ready file) once connected, starts when the --go file
  // exists, and logs each acquisition's request, grant and release (System.nanoTime is
  // CLOCK_MONOTONIC, the clock of the other processes' logs) into --log for zklock-bench.
  private static void runBusyProcess(String connect, String path, int threads, int cycles, long holdNs, String logFile,
                                     String readyFile, String goFile) throws Exception {
    if (logFile == null || readyFile == null || goFile == null) PeerSupport.usage("--kind busy-process needs --log, --ready, --go");
    List<CuratorFramework> one = connectAll(connect, 1);
    CuratorFramework client = one.get(0);
    // A mutex object per thread, as the mutex kind has: one shared InterProcessMutex wakes all
    // its waiting threads on every watch event (one monitor, notifyAll) -- a herd of listings.
    final long[][] log = new long[threads * cycles][];
    final AtomicInteger n = new AtomicInteger();
    final AtomicInteger inside = new AtomicInteger();
    final CountDownLatch start = new CountDownLatch(1), done = new CountDownLatch(threads);
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    for (int i = 0; i < threads; ++i) {
      final InterProcessMutex m = new InterProcessMutex(client, path);
      Thread t = new Thread(() -> {
        try {
          start.await();
          for (int k = 0; k < cycles; ++k) {
            long req = System.nanoTime();
            m.acquire();
            long grant = System.nanoTime();
            if (inside.incrementAndGet() != 1) violations.incrementAndGet();
            if (holdNs > 0) sleepNanos(holdNs);
            inside.decrementAndGet();
            long rel = System.nanoTime();
            log[n.getAndIncrement()] = new long[] {req, grant, rel};
            m.release();
          }
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        } finally {
          done.countDown();
        }
      }, "busy-" + i);
      t.start();
    }
    Files.write(Paths.get(readyFile), new byte[] {'\n'});
    while (!new File(goFile).exists()) Thread.sleep(0, 500_000);
    long cpu0 = processCpuNanos();
    start.countDown();
    done.await();
    long cpu1 = processCpuNanos();
    if (failure.get() != null) throw new RuntimeException(failure.get());
    client.close();
    StringBuilder sb = new StringBuilder();
    sb.append("# requests -1\n# sessions 1\n# violations ").append(violations.get()).append("\n# cpu_s ")
        .append((cpu1 - cpu0) / 1e9).append("\n");
    for (int i = 0; i < n.get(); ++i) sb.append(log[i][0]).append(' ').append(log[i][1]).append(' ').append(log[i][2]).append('\n');
    Files.write(Paths.get(logFile + ".tmp"), sb.toString().getBytes());
    Files.move(Paths.get(logFile + ".tmp"), Paths.get(logFile));
  }

  // threads, memory and CPU: the keys every kind reports after its own
  private static void putProcessFigures(Map<String, String> r, Contended run, int acq) {
    r.put("threads", Integer.toString(run.threadsPeak));
    r.put("rss_kb", Long.toString(rssKb("VmHWM:")));
    r.put("cpu_us_per_acq", PeerSupport.fmt(run.cpuS * 1e6 / Math.max(1, acq)));
  }

  private static void sleepNanos(long ns) {
    long until = System.nanoTime() + ns;
    for (long left = ns; left > 0; left = until - System.nanoTime()) LockSupport.parkNanos(left);
  }

  // Readers and writers on one InterProcessReadWriteLock; handoffs as in zklock-bench: a read
  // handoff is a writer's release start to the grant of a reader already waiting; a write
  // handoff is the lock turning free (a writer, or the last reader inside, starts releasing) to
  // the grant of a writer already waiting. The hold is a sleep (zklock-bench's is a timer).
  private static void runShared(String connect, String path, int readers, int writers, int cycles, long holdNs,
                                String jsonFile) throws Exception {
    List<CuratorFramework> clients = connectAll(connect, readers + writers);
    final RwState st = new RwState();  // its monitor guards it
    Contended run = runContended(clients, threadCount(), me -> {
      final boolean reader = me < readers;
      InterProcessReadWriteLock rw = new InterProcessReadWriteLock(clients.get(me), path);
      InterProcessMutex lock = reader ? rw.readLock() : rw.writeLock();
      for (int k = 0; k < cycles; ++k) {
        long waitingSince = System.nanoTime();
        lock.acquire();
        long now = System.nanoTime();
        synchronized (st) {
          if (reader) {
            if (after(st.writeReleased, waitingSince)) st.readHandoffs.add((now - st.writeReleased) / 1e3);
            if (st.writerInside) ++st.violations;
            st.maxReadersInside = Math.max(st.maxReadersInside, ++st.readersInside);
            ++st.reads;
          } else {
            if (after(st.freeSince, waitingSince)) st.writeHandoffs.add((now - st.freeSince) / 1e3);
            if (st.writerInside || st.readersInside > 0) ++st.violations;
            st.writerInside = true;
            ++st.writes;
          }
        }
        if (holdNs > 0) sleepNanos(holdNs);
        synchronized (st) {
          if (reader) {
            if (--st.readersInside == 0) st.freeSince = System.nanoTime();
          } else {
            st.writerInside = false;
            st.writeReleased = st.freeSince = System.nanoTime();
          }
        }
        lock.release();
      }
    });
    double[] rh = PeerSupport.toArray(st.readHandoffs), wh = PeerSupport.toArray(st.writeHandoffs);
    int acq = st.reads + st.writes;
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("kind", "shared");
    r.put("readers", Integer.toString(readers));
    r.put("writers", Integer.toString(writers));
    r.put("cycles", Integer.toString(cycles));
    r.put("read_acquisitions", Integer.toString(st.reads));
    r.put("write_acquisitions", Integer.toString(st.writes));
    r.put("throughput", PeerSupport.fmt(acq / run.seconds(0, readers + writers)));
    r.put("read_throughput", PeerSupport.fmt(st.reads / run.seconds(0, readers)));
    r.put("write_throughput", PeerSupport.fmt(st.writes / run.seconds(readers, readers + writers)));
    r.put("read_handoff_p50_us", PeerSupport.fmt(PeerSupport.percentile(rh, 50)));
    r.put("read_handoff_p99_us", PeerSupport.fmt(PeerSupport.percentile(rh, 99)));
    r.put("read_handoffs", Integer.toString(rh.length));
    r.put("write_handoff_p50_us", PeerSupport.fmt(PeerSupport.percentile(wh, 50)));
    r.put("write_handoff_p99_us", PeerSupport.fmt(PeerSupport.percentile(wh, 99)));
    r.put("write_handoffs", Integer.toString(wh.length));
    r.put("max_readers_inside", Integer.toString(st.maxReadersInside));
    r.put("violations", Integer.toString(st.violations));
    putProcessFigures(r, run, acq);
    PeerSupport.emit(r, jsonFile);
    System.exit(st.violations == 0 ? 0 : 1);
  }

  // The shared kind's bookkeeping; times are System.nanoTime(), NEVER before the first.
  private static final long NEVER = Long.MIN_VALUE;
  private static final class RwState {
    long writeReleased = NEVER, freeSince = NEVER;
    int readersInside, maxReadersInside, violations, reads, writes;
    boolean writerInside;
    final List<Double> readHandoffs = new ArrayList<>(), writeHandoffs = new ArrayList<>();
  }

  // t happened after `since` (nanoTime order)
  private static boolean after(long t, long since) {
    return t != NEVER && t - since > 0;
  }

  // contenders on one InterProcessSemaphoreV2 of `leases`; a handoff as in zklock-bench: a
  // release while every lease is taken, to the next grant if it went to a contender already
  // waiting (each such release frees one lease, which the next grant takes). warmupCycles: every
  // contender runs that many cycles first, unrecorded (the JIT compiles Curator's paths), and
  // waits for the others to finish theirs; the measured cycles start together (as zklock-bench's).
  private static void runSemaphore(String connect, String path, int contenders, int leases, int cycles,
                                   int warmupCycles, long holdNs, String jsonFile) throws Exception {
    List<CuratorFramework> clients = connectAll(connect, contenders);
    final SemState st = new SemState();  // its monitor guards it
    final java.util.concurrent.CyclicBarrier warmed = new java.util.concurrent.CyclicBarrier(contenders, () -> {
      synchronized (st) {
        st.freed.clear();
        st.measureStart = System.nanoTime();
      }
    });
    Contended run = runContended(clients, threadCount(), me -> {
      InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(clients.get(me), path, leases);
      for (int k = 0; k < warmupCycles + cycles; ++k) {
        if (k == warmupCycles && warmupCycles > 0) warmed.await();
        boolean recorded = k >= warmupCycles;
        long waitingSince = System.nanoTime();
        Lease lease = sem.acquire();
        long now = System.nanoTime();
        synchronized (st) {
          Long f = st.freed.pollFirst();
          if (recorded && f != null && after(f, waitingSince)) st.handoffs.add((now - f) / 1e3);
          st.maxInside = Math.max(st.maxInside, ++st.inside);
          if (st.inside > leases) ++st.violations;
          ++st.acquisitions;
          if (recorded) ++st.measured;
        }
        if (holdNs > 0) sleepNanos(holdNs);
        synchronized (st) {
          if (st.inside-- == leases) st.freed.addLast(System.nanoTime());
        }
        sem.returnLease(lease);
      }
      synchronized (st) { st.lastFinish = Math.max(st.lastFinish, System.nanoTime()); }
    });
    double[] hs = PeerSupport.toArray(st.handoffs);
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("kind", "semaphore");
    r.put("contenders", Integer.toString(contenders));
    r.put("leases", Integer.toString(leases));
    r.put("cycles", Integer.toString(cycles));
    r.put("warmup_cycles", Integer.toString(warmupCycles));
    r.put("acquisitions", Integer.toString(st.measured));
    double seconds = warmupCycles > 0 ? (st.lastFinish - st.measureStart) / 1e9 : run.seconds(0, contenders);
    r.put("throughput", PeerSupport.fmt(st.measured / seconds));
    r.put("handoff_p50_us", PeerSupport.fmt(PeerSupport.percentile(hs, 50)));
    r.put("handoff_p99_us", PeerSupport.fmt(PeerSupport.percentile(hs, 99)));
    r.put("handoffs", Integer.toString(hs.length));
    r.put("max_inside", Integer.toString(st.maxInside));
    r.put("violations", Integer.toString(st.violations));
    putProcessFigures(r, run, st.acquisitions);
    PeerSupport.emit(r, jsonFile);
    System.exit(st.violations == 0 ? 0 : 1);
  }

  // The semaphore kind's bookkeeping: freed holds the release times (nanoTime) of releases from
  // full whose lease no grant has taken yet.
  private static final class SemState {
    int inside, maxInside, violations, acquisitions, measured;
    long measureStart, lastFinish;
    final ArrayDeque<Long> freed = new ArrayDeque<>();
    final List<Double> handoffs = new ArrayList<>();
  }

  private static int threadCount() {
    String[] t = new File("/proc/self/task").list();
    return t == null ? Thread.activeCount() : t.length;
  }

  private static long rssKb(String field) {
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/self/status")))
        if (l.startsWith(field)) return Long.parseLong(l.substring(field.length()).trim().split("\\s+")[0]);
    } catch (IOException | NumberFormatException e) {
      // fall through
    }
    return -1;
  }

  private static long processCpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean)
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    return -1;
  }
}
