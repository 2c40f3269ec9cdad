package dev.rlockd;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The nodes of one rlockd process and what test control does over all of them: the clock
 * and the checks. Package-private: {@link RlockdCluster} and {@link RlockdReplicated} expose it.
 */
final class Topology {
    final RlockdServer first;
    final List<RlockdServer> nodes;

    Topology(RlockdServer first) {
        this.first = first;
        List<RlockdServer> ns = new ArrayList<>();
        for (int p : first.nodePorts) {
            ns.add(first.node(p));
        }
        this.nodes = List.copyOf(ns);
    }

    /** The nodes that accept connections (a cluster node taken down does not). */
    List<RlockdServer> up() {
        List<RlockdServer> out = new ArrayList<>();
        for (RlockdServer n : nodes) {
            try {
                if (n.ping()) {
                    out.add(n);
                }
            } catch (RlockdException e) {
                // down
            }
        }
        return out;
    }

    long advanceClock(Duration by) {
        long now = 0;
        boolean first = true;
        for (RlockdServer n : up()) {
            long t = n.advanceClock(by);
            if (first) {
                now = t;
                first = false;
            }
        }
        return now;
    }

    List<String> checkLocks() {
        Set<String> all = new LinkedHashSet<>();
        for (RlockdServer n : up()) {
            all.addAll(n.checkLocks());
        }
        return List.copyOf(all);
    }

    void assertLocksSafe() {
        List<String> v = checkLocks();
        if (!v.isEmpty()) {
            throw new LocksUnsafeError(v);
        }
    }

    void resetLockChecks() {
        for (RlockdServer n : up()) {
            n.resetLockChecks();
        }
    }

    List<String> urls() {
        List<String> out = new ArrayList<>();
        for (RlockdServer n : nodes) {
            out.add(n.url());
        }
        return List.copyOf(out);
    }
}
