// A Curator 5.4 InterProcessMutex holder authenticated with a digest, for the zklock command's
// test that nodes created for those credentials (creator_all) still let Curator share the lock.
//   java ... CuratorDigestPeer CONNECT USER:PASSWORD PATH
//     acquires PATH (waits up to 60 s); prints "holding NODE"; releases when a line (or EOF)
//     arrives on stdin; prints "released". Exit 1 if not acquired.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorDigestPeer {
  public static void main(String[] args) throws Exception {
    try (CuratorFramework client = CuratorFrameworkFactory.builder()
             .connectString(args[0])
             .sessionTimeoutMs(10000)
             .connectionTimeoutMs(10000)
             .retryPolicy(new ExponentialBackoffRetry(100, 5))
             .authorization("digest", args[1].getBytes(StandardCharsets.UTF_8))
             .build()) {
      client.start();
      client.blockUntilConnected();
      InterProcessMutex mutex = new InterProcessMutex(client, args[2]);
      if (!mutex.acquire(60, TimeUnit.SECONDS)) System.exit(1);
      System.out.println("holding " + mutex.getParticipantNodes().iterator().next());
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in)).readLine();
      mutex.release();  // from the acquiring thread (InterProcessMutex is thread-bound)
      System.out.println("released");
      System.out.flush();
    }
  }
}
