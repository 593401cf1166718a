// The Java primitives the Nexmark generator is built from, printed by the
// real JDK for test_nexmark.py to hold nexmark_ref.py's port of them to:
// java.util.Random (seeded as the generator seeds it, with an event id),
// Math.pow and Math.round as PriceGenerator uses them, Math.round of the
// extra's size, Integer.reverse and Math.abs of a channel number, and
// String.trim. Run as `java JavaRandomProbe.java N`: one line per seed.
import java.util.Random;

public class JavaRandomProbe {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int[] bounds = {2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 26, 46, 100, 1010, 10000, 2147483647};
        for (long seed = -3; seed < n; seed++) {
            long s = seed * 7919 + (seed % 5 == 0 ? 123456789012L : 0);
            Random r = new Random(s);
            StringBuilder b = new StringBuilder();
            b.append(s);
            for (int bound : bounds)
                b.append(' ').append(r.nextInt(bound));
            b.append(' ').append(r.nextInt());
            b.append(' ').append(r.nextLong());
            double d = r.nextDouble();
            b.append(' ').append(Double.doubleToRawLongBits(d));
            b.append(' ').append(Math.round(Math.pow(10.0, d * 6.0) * 100.0));
            b.append(' ').append(Math.round((int) (seed & 1023) * 0.2));
            int ch = (int) (Math.abs(seed) % 10000);
            b.append(' ').append(Math.abs(Integer.reverse(ch)));
            b.append(' ').append(ch % 26).append(' ').append(-ch % 26).append(' ').append(-ch / 26);
            b.append(" [").append("  a b ".substring((int) (Math.abs(seed) % 3)).trim()).append(']');
            System.out.println(b);
        }
    }
}
