// Revocation interop peer (Curator 5.4's protocol: Revoker.attemptRevoke writes "__REVOKE__"
// into the holder's node; a holder that called makeRevocable hears it through its listener).
//   java ... CuratorRevocation revoker CONNECT
//     reads node paths on stdin, one a line; for each prints "sent <System.nanoTime()>" and
//     calls Revoker.attemptRevoke(client, node).
//   java ... CuratorRevocation holder CONNECT PATH SECONDS
//     InterProcessMutex on PATH, makeRevocable(listener), acquire; prints "holding"; when the
//     listener fires prints "revoked" and releases (exit 0); exit 1 if it did not within SECONDS.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorRevocation {
  public static void main(String[] args) throws Exception {
    String mode = args[0], connect = args[1];
    try (CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 10000,
             new ExponentialBackoffRetry(100, 5))) {
      client.start();
      client.blockUntilConnected();
      if (mode.equals("revoker")) {
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String node; (node = in.readLine()) != null;) {
          long t0 = System.nanoTime();  // CLOCK_MONOTONIC on Linux, as std::chrono::steady_clock
          Revoker.attemptRevoke(client, node.trim());
          System.out.println("sent " + t0);
          System.out.flush();
        }
        return;
      }
      String path = args[2];
      int seconds = Integer.parseInt(args[3]);
      InterProcessMutex mutex = new InterProcessMutex(client, path);
      CountDownLatch revoked = new CountDownLatch(1);
      mutex.makeRevocable(lock -> revoked.countDown());
      mutex.acquire();
      System.out.println("holding " + mutex.getParticipantNodes().iterator().next());
      System.out.flush();
      boolean asked = revoked.await(seconds, TimeUnit.SECONDS);
      if (asked) {
        System.out.println("revoked");
        System.out.flush();
      }
      mutex.release();  // from the acquiring thread (InterProcessMutex is thread-bound)
      System.exit(asked ? 0 : 1);
    }
  }
}
