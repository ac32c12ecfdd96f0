// A fault-harness client process: Apache Curator 5 InterProcessMutex, the same protocol as
// zklock_worker.cpp (see resource_client.hpp).
//   java -cp <curator jars>:<classes> CuratorWorker RESOURCE_PORT CONNECT PATH WHO SESSION_TIMEOUT_MS HOLD_MS loop|hold [latch]
// latch (hold mode, the partition window of an election): a Curator LeaderLatch with id WHO
// instead of the mutex; once it leads, "grant" (token: its latch node's czxid), then it holds
// until SIGTERM; its LeaderLatchListener.notLeader() is reported as "lost" (Curator 5's
// default error policy calls it at SUSPENDED), connection states as "state".
// Fencing token: the czxid of our lock node (the same quantity as zklock's fencing_token(),
// so both can write to one resource; within one lock dir it orders holders as the node's
// sequence number does). As Curator advises, a holder treats SUSPENDED as lost: it stops
// writing at SUSPENDED or LOST. Connection states are reported as "state" messages.
// SIGUSR1: stop acquiring (a waiting acquire is interrupted, which removes its node), report
// "idle". SIGTERM: close the client and exit.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public class CuratorWorker {
  // getLockPath() is protected: the node this mutex holds.
  static class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework c, String path) { super(c, path); }
    String node() { return getLockPath(); }
  }

  static Socket sock;
  static OutputStream out;
  static BufferedReader in;
  static String who;
  static volatile boolean connectionOk = true;
  static volatile boolean stopping = false;

  static synchronized String send(String kind, long token, String extra) throws Exception {
    String line = kind + " " + who + " " + token + " " + System.nanoTime() + (extra.isEmpty() ? "" : " " + extra) + "\n";
    out.write(line.getBytes(StandardCharsets.UTF_8));
    out.flush();
    String r = in.readLine();
    return r == null ? "" : r;
  }

  static int holdOf(String reply, int fallback) {
    int at = reply.indexOf("HOLD ");
    if (at < 0) return fallback;
    String[] w = reply.substring(at + 5).split(" ");
    return Integer.parseInt(w[0]);
  }

  static void selfStop() throws Exception {
    long pid = ProcessHandle.current().pid();
    new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor();
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    String connect = args[1], path = args[2];
    who = args[3];
    int sessionTimeout = Integer.parseInt(args[4]);
    int holdMs = Integer.parseInt(args[5]);
    boolean loop = args[6].equals("loop");
    sock = new Socket("127.0.0.1", port);
    sock.setTcpNoDelay(true);
    out = sock.getOutputStream();
    in = new BufferedReader(new InputStreamReader(sock.getInputStream(), StandardCharsets.UTF_8));

    CuratorFramework client = CuratorFrameworkFactory.newClient(connect, sessionTimeout, 60000,
        new ExponentialBackoffRetry(100, 10, 1000));
    client.getConnectionStateListenable().addListener((c, st) -> {
      connectionOk = st.isConnected();
      try {
        send("state", 0, st.name());
      } catch (Exception e) {
      }
    });
    Thread main = Thread.currentThread();
    sun.misc.Signal.handle(new sun.misc.Signal("USR1"), s -> {
      stopping = true;
      main.interrupt();
    });
    Runtime.getRuntime().addShutdownHook(new Thread(client::close));  // SIGTERM: close the session
    client.start();
    client.blockUntilConnected();
    send("hello", 0, "0x" + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId()));
    if (args.length > 7 && args[7].equals("latch")) {
      LeaderLatch latch = new LeaderLatch(client, path, who);
      latch.addListener(new LeaderLatchListener() {
        public void isLeader() {}
        public void notLeader() {
          try {
            send("lost", 0, "notLeader");
          } catch (Exception e) {
          }
        }
      });
      send("acquire", 0, "");
      latch.start();
      latch.await();
      long token = 0;
      try {
        Stat st = client.checkExists().forPath(latch.getOurPath());
        token = st == null ? 0 : st.getCzxid();
      } catch (Exception e) {
      }
      send("grant", token, latch.getOurPath());
      Thread.sleep(Long.MAX_VALUE);  // until SIGTERM
    }
    Mutex mutex = new Mutex(client, path);
    while (!stopping) {
      send("acquire", 0, "");
      try {
        mutex.acquire();
      } catch (InterruptedException e) {
        break;
      } catch (Exception e) {
        send("acquire_error", 0, "'" + e.getClass().getSimpleName() + "'");
        Thread.sleep(100);
        continue;
      }
      long token = 0;
      try {
        Stat st = client.checkExists().forPath(mutex.node());
        token = st == null ? 0 : st.getCzxid();
      } catch (Exception e) {
      }
      if (token == 0 || !connectionOk) {
        send("dead_grant", token, "'no node or not connected'");
      } else {
        String reply = send("grant", token, mutex.node());
        boolean ok = reply.startsWith("OK");
        boolean pause = reply.contains(" PAUSE");
        long until = System.nanoTime() + holdOf(reply, holdMs) * 1000000L;
        if (!ok) send("lost", token, "rejected");
        while (ok) {
          if (!loop && stopping) break;
          try {
            Thread.sleep(10);
          } catch (InterruptedException e) {
            // SIGUSR1 while holding: finish the section
          }
          if (!connectionOk) {
            send("lost", token, "state");
            break;
          }
          if (pause) {
            pause = false;
            selfStop();
          }
          boolean last = loop && System.nanoTime() >= until;
          if (!send(last ? "end" : "write", token, "").startsWith("OK")) {
            send("lost", token, "rejected");
            break;
          }
          if (last) break;
        }
      }
      Thread.interrupted();  // a SIGUSR1 during the section must not fail the release
      try {
        mutex.release();
        send("released", token, "ok");
      } catch (Exception e) {
        send("released", 0, "'" + e.getClass().getSimpleName() + "'");
      }
      if (!loop) break;
      try {
        Thread.sleep((long) (Math.random() * 20));
      } catch (InterruptedException e) {
        break;  // SIGUSR1
      }
    }
    Thread.interrupted();
    send("idle", 0, "");
    // until SIGTERM
    Thread.sleep(Long.MAX_VALUE);
  }
}
