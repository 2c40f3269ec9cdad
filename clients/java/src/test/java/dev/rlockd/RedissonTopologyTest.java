package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** A cluster through Redisson's useClusterServers, a primary with replicas through useSentinelServers. */
class RedissonTopologyTest {
    @Test
    void redissonClusterFollowsAMovedSlot() throws Exception {
        try (RlockdCluster c = RlockdCluster.start(3)) {
            assertEquals(3, c.nodes().size());
            Config config = new Config();
            config.useClusterServers().addNodeAddress(c.urls().toArray(new String[0]));
            RedissonClient redisson = Redisson.create(config);
            try {
                RLock lock = redisson.getLock("orders");
                lock.lock(30, TimeUnit.SECONDS);
                int slot = c.keySlot("orders");
                int owner = c.slotOwner(slot);
                int to = (owner + 1) % 3;
                assertEquals(1, c.moveSlot(slot, to)); // the lock's hash went with its slot
                assertEquals(to, c.slotOwner(slot));
                assertTrue(lock.isLocked()); // Redisson followed MOVED
                assertEquals("reentrant", c.locks().get(0).kind());
                c.advanceClock(Duration.ofSeconds(30)); // every node's clock
                assertFalse(lock.isLocked());
                c.assertLocksSafe();
            } finally {
                redisson.shutdown();
            }
        }
    }

    @Test
    void clusterNodeDownAndUp() {
        try (RlockdCluster c = RlockdCluster.start(3)) {
            int owner = c.slotOwner(c.keySlot("k"));
            RlockdServer down = c.node(owner);
            RlockdServer other = c.node((owner + 1) % 3);
            down.command("SET", "k", "v");
            c.takeDown(owner);
            assertThrows(RlockdException.class, down::ping);
            RlockdException e = assertThrows(RlockdException.class, () -> other.command("GET", "k"));
            assertTrue(e.getMessage().startsWith("CLUSTERDOWN"), e.getMessage());
            c.bringUp(owner);
            assertEquals("v", down.commandString("GET", "k"));
        }
    }

    static RedissonClient viaSentinels(RlockdReplicated r) throws Exception {
        Config config = new Config();
        config.useSentinelServers().setMasterName(r.masterName())
                .addSentinelAddress(r.sentinelUrls().toArray(new String[0]));
        // Redisson 3.2x and later WAIT for a replica on each lock by default (checkLockSyncedSlaves)
        // and refuse the lock when none has it: the check this scenario switches off to show the
        // failover that loses a lock. Older lines have no such setting.
        try {
            Config.class.getMethod("setCheckLockSyncedSlaves", boolean.class).invoke(config, false);
        } catch (NoSuchMethodException e) {
            // an older Redisson: no check to switch off
        }
        return Redisson.create(config);
    }

    @Test
    void redissonThroughSentinelsLosesTheLockInAFailover() throws Exception {
        try (RlockdReplicated r = RlockdReplicated.start(1, 3)) {
            assertEquals("mymaster", r.masterName());
            assertEquals(3, r.sentinelUrls().size());
            assertEquals(List.of(r.replicas().get(0).url()), r.replicaUrls());
            assertEquals(r.primary().host() + ":" + r.primary().port(), r.sentinelPrimary());
            RedissonClient a = viaSentinels(r);
            RedissonClient b = null;
            try {
                assertEquals(1, r.pauseReplication()); // the lock will not reach the replica
                a.getLock("order:42").lock(30, TimeUnit.SECONDS);
                ReplicationLink link = r.replicationStatus().get(0);
                assertTrue(link.paused() && link.pendingWrites() >= 1, link.toString());
                RlockdServer primary = r.failover();
                assertEquals(r.replicas().get(0).port(), primary.port());
                b = viaSentinels(r);
                assertTrue(b.getLock("order:42").tryLock()); // a second holder
                LocksUnsafeError unsafe = assertThrows(LocksUnsafeError.class, r::assertLocksSafe);
                assertTrue(unsafe.getMessage().contains("order:42"), unsafe.getMessage());
            } finally {
                a.shutdown();
                if (b != null) {
                    b.shutdown();
                }
            }
        }
    }

    @Test
    void replicationLagBreakRestore() {
        try (RlockdReplicated r = RlockdServer.builder().password("secret").startReplicated(1, 0)) {
            assertTrue(r.sentinelUrls().isEmpty());
            assertEquals(1, r.setReplicationLag(Duration.ofMillis(50)));
            assertEquals(50, r.replicationStatus().get(0).lagMs());
            assertEquals(1, r.breakReplication(r.replicas().get(0).port()));
            assertTrue(r.replicas().get(0).commandString("INFO", "replication").contains("master_link_status:down"));
            assertEquals(1, r.restoreReplication());
            assertEquals(r.primary().port(), r.currentPrimary().port());
            assertNotEquals(r.primary().port(), r.replicas().get(0).port());
        }
    }

    @Test
    void clusterReplicasArePassedToTheBinary() {
        RlockdCluster c;
        try {
            c = RlockdServer.builder().clusterReplicas(1).startCluster(2);
        } catch (RlockdException e) { // a binary without cluster replicas says so in its log
            assertTrue(e.logs() != null && e.logs().contains("cluster-replicas"), e.getMessage());
            return;
        }
        try (c) {
            assertEquals(4, c.nodes().size());
            List<String> roles = new java.util.ArrayList<>();
            for (RlockdServer n : c.nodes()) {
                roles.add(Control.text(Control.list(n.command("ROLE")).get(0)));
            }
            java.util.Collections.sort(roles);
            assertEquals(List.of("master", "master", "slave", "slave"), roles);
        }
    }
}
