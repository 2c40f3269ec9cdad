package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The cluster's replication and failover controls; options refused in one line. */
class ClusterControlTest {

    @Test
    void aClusterFailoverLosesAnUnreplicatedLock() {
        try (RlockdCluster c = RlockdServer.builder().clusterReplicas(1).startCluster(3)) {
            int slot = c.keySlot("orders");
            int owner = c.slotOwner(slot);
            RlockdServer primary = c.node(owner);
            assertEquals(1, c.pauseReplication(owner));
            assertEquals("OK", primary.commandString("SET", "orders", "client-1", "NX", "PX", "30000"));
            assertEquals(1, c.replicationStatus().stream().filter(ReplicationLink::paused).count());
            RlockdServer next = c.failover(owner); // its replica takes the slots without the lock
            assertNotEquals(primary.port(), next.port());
            assertEquals(c.nodes().indexOf(next), c.slotOwner(slot));
            assertEquals("OK", next.commandString("SET", "orders", "client-2", "NX", "PX", "30000"));
            assertFalse(c.checkLocks().isEmpty()); // two holders, seen from any node
            assertEquals(3, c.setReplicationLag(Duration.ZERO));
            assertEquals(3, c.resumeReplication());
            assertEquals(3, c.breakReplication());
            assertEquals(3, c.restoreReplication());
            assertEquals(0, c.dropReplication());
        }
    }

    @Test
    void theReplicatedSetMovesItsClockByMilliseconds() {
        try (RlockdReplicated r = RlockdReplicated.start(1, 0)) {
            long before = r.primary().clockMs();
            assertTrue(r.advanceClock(60_000) >= before + 60_000);
        }
    }

    @Test
    void aReplicatedNodeTakenDownAndBroughtUp() {
        try (RlockdReplicated r = RlockdReplicated.start(1, 1)) {
            r.takeDown(1); // the replica crashes: its port closes
            assertThrows(RuntimeException.class, () -> r.replicas().get(0).command("PING"));
            r.bringUp(1);
            assertEquals("PONG", r.replicas().get(0).commandString("PING"));
        }
    }

    @Test
    void wrongValuesAreRefusedNamingTheOptions() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RlockdServer.builder().port(70000));
        assertEquals("RlockdServer.builder().port takes a port from 0 to 65535, not 70000 (options: port, host, "
                + "password, arg, binary, startupTimeout, clusterReplicas)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RlockdServer.builder().clusterReplicas(-1));
        assertThrows(IllegalArgumentException.class, () -> RlockdServer.builder().startupTimeout(0));
        assertThrows(IllegalArgumentException.class, () -> RlockdServer.builder().startCluster(0));
    }

    @Test
    void anUnknownRlockdPropertyIsRefused() {
        System.setProperty("rlockd.binnary", "/usr/bin/rlockd");
        try {
            RlockdException e = assertThrows(RlockdException.class, RlockdServer::start);
            assertEquals("unknown system property -Drlockd.binnary; accepted: -Drlockd.binary, -Drlockd.cache.dir, "
                    + "-Drlockd.platform, -Drlockd.artifacts, -Drlockd.record", e.getMessage());
        } finally {
            System.clearProperty("rlockd.binnary");
        }
    }
}
