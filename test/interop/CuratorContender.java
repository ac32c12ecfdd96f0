// Interop contender: Apache Curator 5 InterProcessMutex. Repeatedly acquires PATH, writes
// "enter <who>" / "leave <who>" to the exclusion log (one O_APPEND write each), releases.
//   java -cp <curator jars>:. CuratorContender CONNECT PATH CYCLES LOGFILE WHO
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorContender {
  public static void main(String[] args) throws Exception {
    String connect = args[0], path = args[1], log = args[3], who = args[4];
    int cycles = Integer.parseInt(args[2]);
    try (FileOutputStream out = new FileOutputStream(log, true);
         CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 10000,
             new ExponentialBackoffRetry(100, 5))) {
      client.start();
      client.blockUntilConnected();
      InterProcessMutex mutex = new InterProcessMutex(client, path);
      byte[] enter = ("enter " + who + "\n").getBytes(StandardCharsets.UTF_8);
      byte[] leave = ("leave " + who + "\n").getBytes(StandardCharsets.UTF_8);
      for (int i = 0; i < cycles; i++) {
        mutex.acquire();
        out.write(enter);
        Thread.sleep(1);
        out.write(leave);
        mutex.release();
      }
    }
  }
}
