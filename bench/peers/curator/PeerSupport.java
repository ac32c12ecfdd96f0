// What the Curator peers share (CuratorBench.java, CuratorElection.java; compiled with each by
// peer.sh): the command line, the exit statuses, the clients, and the result line with its JSON
// and percentiles, the same as bench/result_line.hpp and the kazoo peers' kazoo_peer.py.
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

final class PeerSupport {
  private PeerSupport() {}

  private static String program = "peer", usageLine = "";

  // A peer's main: exit status 1 is reserved for violations, so any failure exits 2.
  interface Main { void run(Args a) throws Exception; }

  static void main(String name, String usage, String[] args, Main body) {
    program = name;
    usageLine = usage;
    try {
      body.run(new Args(args));
    } catch (Throwable e) {
      System.err.println(program + ": " + e);
      e.printStackTrace();
      System.exit(2);
    }
  }

  static void usage(String msg) {
    System.err.println(program + ": " + msg);
    System.err.println("usage: " + program + " " + usageLine);
    System.exit(2);
  }

  static void say(String msg) { System.err.println(program + ": " + msg); }

  // --name value or --name=value, each option at most once; ask for each with its default, then
  // done() refuses what nobody asked for.
  static final class Args {
    private final Map<String, String> given = new HashMap<>();

    Args(String[] args) {
      for (int i = 0; i < args.length; ++i) {
        String a = args[i], v = null;
        int eq = a.indexOf('=');
        if (!a.startsWith("--")) usage("bad argument " + a);
        if (eq > 0) { v = a.substring(eq + 1); a = a.substring(0, eq); }
        else if (i + 1 < args.length) v = args[++i];
        else usage("missing value for " + a);
        given.put(a, v);
      }
    }

    String str(String name, String dflt) { String v = given.remove(name); return v == null ? dflt : v; }
    int integer(String name, int dflt) { String v = given.remove(name); return v == null ? dflt : Integer.parseInt(v); }
    long whole(String name, long dflt) { String v = given.remove(name); return v == null ? dflt : Long.parseLong(v); }

    void done() {
      for (String a : given.keySet()) usage("unknown option " + a);
    }
  }

  // n clients (n sessions) connected in parallel; exits 2 when one does not connect in 60 s.
  static List<CuratorFramework> connectAll(String connect, int n, int sessionTimeoutMs) throws InterruptedException {
    List<CuratorFramework> clients = new ArrayList<>();
    for (int i = 0; i < n; ++i) {
      CuratorFramework c = CuratorFrameworkFactory.builder()
          .connectString(connect)
          .sessionTimeoutMs(sessionTimeoutMs)
          .connectionTimeoutMs(60_000)
          .retryPolicy(new ExponentialBackoffRetry(100, 5))
          .build();
      c.start();
      clients.add(c);
    }
    for (int i = 0; i < n; ++i)
      if (!clients.get(i).blockUntilConnected(60, TimeUnit.SECONDS)) {
        say("client " + i + " could not connect to " + connect);
        System.exit(2);
      }
    say(n + " sessions connected");
    return clients;
  }

  // nearest rank (p in 0..100), NaN without samples
  static double percentile(double[] v, double p) {
    if (v.length == 0) return Double.NaN;
    double[] s = v.clone();
    Arrays.sort(s);
    int idx = (int) Math.ceil(p / 100.0 * s.length);
    return s[Math.min(s.length - 1, idx == 0 ? 0 : idx - 1)];
  }

  static double[] toArray(List<Double> v) {
    return v.stream().mapToDouble(Double::doubleValue).toArray();
  }

  // one decimal; a figure that is not a finite number is "nan" (JSON null), as in result_line.hpp
  static String fmt(double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) return "nan";
    return String.format(Locale.ROOT, "%.1f", v);
  }

  // The key=value line on stdout, and the same keys as flat JSON into jsonFile when given.
  static void emit(Map<String, String> r, String jsonFile) throws IOException {
    StringBuilder line = new StringBuilder(), js = new StringBuilder("{");
    for (Map.Entry<String, String> e : r.entrySet()) {
      String v = e.getValue();
      boolean number = !v.isEmpty() && (Character.isDigit(v.charAt(0)) || v.charAt(0) == '-');
      if (line.length() > 0) { line.append(' '); js.append(", "); }
      line.append(e.getKey()).append('=').append(v);
      js.append('"').append(e.getKey()).append("\": ").append(v.equals("nan") ? "null" : number ? v : "\"" + v + "\"");
    }
    System.out.println(line);
    System.out.flush();
    if (jsonFile != null) {
      try (PrintWriter w = new PrintWriter(jsonFile)) { w.print(js.append("}\n")); }
    }
  }

  // every sample, one a line (--cdf)
  static void writeCdf(String cdfFile, double[] samples) throws IOException {
    if (cdfFile == null) return;
    try (PrintWriter w = new PrintWriter(cdfFile)) {
      for (double x : samples) w.println(x);
    }
  }
}
