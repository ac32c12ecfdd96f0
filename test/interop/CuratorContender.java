// Interop contender: Apache Curator 5 InterProcessMutex, or with "rw" InterProcessReadWriteLock.
// Repeatedly acquires PATH, writes "enter <who>" / "leave <who>" to the exclusion log (one
// O_APPEND write each), releases. With "rw", cycle i takes writeLock() when i % 3 == 0 and
// readLock() otherwise, logging enter-write/leave-write or enter-read/leave-read (a read held
// 5 ms, a write 1 ms, as zklock_contender --rw). With "semaphore=N", each cycle takes a lease
// of an InterProcessSemaphoreV2 of N leases, logs enter/leave around a 30 ms hold, returns it
// (as zklock_contender --semaphore=N). With "latch", each cycle starts a LeaderLatch on PATH
// with WHO as its id, awaits leadership, logs enter/leave around a 5 ms term, closes the latch
// (a LeaderLatch cannot restart: a new one per cycle; as zklock_contender --election).
//   java -cp <curator jars>:. CuratorContender CONNECT PATH CYCLES LOGFILE WHO [rw | semaphore=N | latch]
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorContender {
  static byte[] line(String verb, String who) {
    return (verb + " " + who + "\n").getBytes(StandardCharsets.UTF_8);
  }

  public static void main(String[] args) throws Exception {
    String connect = args[0], path = args[1], log = args[3], who = args[4];
    int cycles = Integer.parseInt(args[2]);
    boolean rw = args.length > 5 && args[5].equals("rw");
    int maxLeases = args.length > 5 && args[5].startsWith("semaphore=")
        ? Integer.parseInt(args[5].substring("semaphore=".length())) : 0;
    try (FileOutputStream out = new FileOutputStream(log, true);
         CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 10000,
             new ExponentialBackoffRetry(100, 5))) {
      client.start();
      client.blockUntilConnected();
      if (args.length > 5 && args[5].equals("latch")) {
        for (int i = 0; i < cycles; i++) {
          LeaderLatch latch = new LeaderLatch(client, path, who);
          latch.start();
          latch.await();
          out.write(line("enter", who));
          Thread.sleep(5);
          out.write(line("leave", who));
          latch.close();
        }
        return;
      }
      if (maxLeases > 0) {
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, maxLeases);
        for (int i = 0; i < cycles; i++) {
          Lease lease = semaphore.acquire();
          out.write(line("enter", who));
          Thread.sleep(30);
          out.write(line("leave", who));
          semaphore.returnLease(lease);
        }
        return;
      }
      InterProcessReadWriteLock rwLock = rw ? new InterProcessReadWriteLock(client, path) : null;
      InterProcessMutex mutex = rw ? null : new InterProcessMutex(client, path);
      for (int i = 0; i < cycles; i++) {
        boolean write = i % 3 == 0;
        InterProcessLock lock = !rw ? mutex : write ? rwLock.writeLock() : rwLock.readLock();
        String suffix = !rw ? "" : write ? "-write" : "-read";
        lock.acquire();
        out.write(line("enter" + suffix, who));
        Thread.sleep(rw && !write ? 5 : 1);
        out.write(line("leave" + suffix, who));
        lock.release();
      }
    }
  }
}
