// Curator 5.4 LeaderLatch peer of zklock-election-bench (bench/election_bench.cpp): the same
// two modes, the same keys and lines; see bench/peers/README.md.
//
//   --mode resign --candidates N --resigns R [--warmup W] [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F]
//     N candidates, each its own CuratorFramework (session) and thread, in this JVM. The leader
//     holds H ms, takes System.nanoTime() and resigns (LeaderLatch.close()); the next leader's
//     code is its LeaderLatchListener.isLeader(), the earliest point Curator runs user code on a
//     new leadership (it is called from the thread that completes the latch's getChildren), which
//     takes the time since. A LeaderLatch cannot restart: the resigner starts a new latch on the
//     same client (it queues last), once the next leader's code ran. The first W resigns are not
//     recorded: the JIT compiles Curator's paths in this JVM (as zklock-election-bench's --warmup).
//   --mode candidate --id NAME [--session-timeout-ms T]
//     One candidate of the kill measurement: "connected negotiated_ms=T", "queued" once its node
//     is in the election, "leader id=NAME t_ns=<System.nanoTime()>" (CLOCK_MONOTONIC on Linux,
//     the clock the driver reads) from isLeader(); then leads until killed (SIGTERM closes).
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;

public final class CuratorElection {
  private static String connect = "127.0.0.1:2181", path = "/zklock-bench/election", jsonFile, cdfFile, id;
  private static int candidates = 3, resigns = 200, holdMs = 20, sessionTimeoutMs = 10000, warmup = 0;

  // resign mode's bookkeeping, under `lock`
  private static final Object lock = new Object();
  private static final List<Double> samples = new ArrayList<>();
  private static long resignStarted = 0;
  private static int resigner = -1, resignsDone = 0, leaders = 0, violations = 0, terms = 0;

  private static final String USAGE = "--connect HOSTS --path PATH [--mode resign|candidate] [--candidates N]"
      + " [--resigns R] [--warmup W] [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F] [--id NAME]";

  public static void main(String[] args) {
    PeerSupport.main("CuratorElection", USAGE, args, a -> {
      String mode = a.str("--mode", "resign");
      connect = a.str("--connect", connect);
      path = a.str("--path", path);
      candidates = a.integer("--candidates", candidates);
      resigns = a.integer("--resigns", resigns);
      holdMs = a.integer("--hold-ms", holdMs);
      warmup = a.integer("--warmup", warmup);
      sessionTimeoutMs = a.integer("--session-timeout-ms", sessionTimeoutMs);
      jsonFile = a.str("--json", null);
      cdfFile = a.str("--cdf", null);
      id = a.str("--id", null);
      a.done();
      if (mode.equals("candidate")) {
        if (id == null) PeerSupport.usage("--mode candidate needs --id");
        candidate();
      } else if (mode.equals("resign")) {
        if (candidates < 2 || resigns < 1) PeerSupport.usage("--candidates >= 2, --resigns >= 1");
        System.exit(resign());
      } else {
        PeerSupport.usage("--mode is resign or candidate");
      }
    });
  }

  // ---- resign: N candidates in this JVM --------------------------------------------------------

  private static int resign() throws Exception {
    List<CuratorFramework> clients = PeerSupport.connectAll(connect, candidates, sessionTimeoutMs);
    CountDownLatch done = new CountDownLatch(candidates);
    List<Thread> threads = new ArrayList<>();
    final Throwable[] failure = {null};
    for (int i = 0; i < candidates; ++i) {
      final int me = i;
      Thread t = new Thread(() -> {
        try {
          candidateLoop(clients.get(me), me);
        } catch (Throwable e) {
          synchronized (lock) { failure[0] = e; }
        } finally {
          done.countDown();
        }
      });
      threads.add(t);
      t.start();
      Thread.sleep(20);  // queue in order, so that the first resigns find every other candidate waiting
    }
    done.await();
    for (CuratorFramework c : clients) c.close();
    if (failure[0] != null) throw new RuntimeException(failure[0]);
    double[] s;
    synchronized (lock) { s = PeerSupport.toArray(samples); }
    Map<String, String> r = new LinkedHashMap<>();
    r.put("impl", "curator");
    r.put("kind", "election-resign");
    r.put("candidates", Integer.toString(candidates));
    r.put("resigns", Integer.toString(resignsDone - warmup));
    r.put("warmup", Integer.toString(warmup));
    r.put("hold_ms", Integer.toString(holdMs));
    r.put("session_timeout_ms", Integer.toString(sessionTimeoutMs));
    r.put("failover_p50_us", PeerSupport.fmt(PeerSupport.percentile(s, 50)));
    r.put("failover_p90_us", PeerSupport.fmt(PeerSupport.percentile(s, 90)));
    r.put("failover_p99_us", PeerSupport.fmt(PeerSupport.percentile(s, 99)));
    r.put("failover_max_us", PeerSupport.fmt(PeerSupport.percentile(s, 100)));
    r.put("failovers", Integer.toString(s.length));
    r.put("violations", Integer.toString(violations));
    PeerSupport.emit(r, jsonFile);
    PeerSupport.writeCdf(cdfFile, s);
    return violations == 0 ? 0 : 1;
  }

  // One candidate's terms: a new latch per term (a LeaderLatch cannot restart), await the
  // listener's signal, hold, time the resign, close.
  private static void candidateLoop(CuratorFramework client, int me) throws Exception {
    for (;;) {
      synchronized (lock) { if (resignsDone >= warmup + resigns) return; }
      Semaphore leading = new Semaphore(0);
      LeaderLatch latch = new LeaderLatch(client, path, "candidate-" + me);
      latch.addListener(new LeaderLatchListener() {
        @Override public void isLeader() {
          long now = System.nanoTime();  // the new leader's code runs here
          synchronized (lock) {
            if (resignStarted != 0 && resigner != me && resignsDone > warmup) samples.add((now - resignStarted) / 1e3);
            resignStarted = 0;
            if (++leaders != 1) ++violations;
            ++terms;
            lock.notifyAll();  // the resigner may start its next latch
          }
          leading.release();
        }
        @Override public void notLeader() {}
      });
      latch.start();
      leading.acquire();
      boolean last;
      int termNo;
      synchronized (lock) { last = resignsDone >= warmup + resigns; termNo = terms; }
      if (!last) Thread.sleep(holdMs);
      synchronized (lock) {
        --leaders;
        last = resignsDone >= warmup + resigns;
        if (!last) {
          ++resignsDone;
          resigner = me;
          resignStarted = System.nanoTime();
        }
      }
      latch.close();
      if (last) return;
      // Rejoin once the next leader's code ran (as zklock-election-bench: a create sent at once
      // would queue ahead of the successor's listing in the standalone server's one pipeline).
      synchronized (lock) {
        while (terms == termNo) lock.wait(100);
      }
    }
  }

  // ---- candidate: one process of the kill measurement --------------------------------------------

  private static void candidate() throws Exception {
    CuratorFramework client = PeerSupport.connectAll(connect, 1, sessionTimeoutMs).get(0);
    System.out.println("connected negotiated_ms=" + client.getZookeeperClient().getZooKeeper().getSessionTimeout());
    System.out.flush();
    LeaderLatch latch = new LeaderLatch(client, path, id);
    latch.addListener(new LeaderLatchListener() {
      @Override public void isLeader() {
        long now = System.nanoTime();
        System.out.println("leader id=" + id + " t_ns=" + now);
        System.out.flush();
      }
      @Override public void notLeader() {}
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try { latch.close(); client.close(); } catch (Exception e) { /* exiting */ }
    }));
    latch.start();
    for (;;) {
      boolean in = false;
      for (Participant p : latch.getParticipants()) in |= p.getId().equals(id);
      if (in) break;
      Thread.sleep(10);
    }
    System.out.println("queued");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
