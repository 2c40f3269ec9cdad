package dev.rlockd.spring;

import dev.rlockd.RlockdCluster;
import dev.rlockd.RlockdReplicated;
import dev.rlockd.RlockdServer;
import java.util.List;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails.Cluster;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails.Node;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails.Sentinel;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails.Standalone;

/** Where a started rlockd topology is, as Spring Boot's Redis auto-configuration reads it. */
final class RlockdConnectionDetails {

    private RlockdConnectionDetails() {}

    static RedisConnectionDetails standalone(RlockdServer server) {
        String host = server.host();
        int port = server.port();
        Standalone where = new Standalone() { // not Standalone.of: the interface as Boot 3.1 has it
            @Override
            public String getHost() {
                return host;
            }

            @Override
            public int getPort() {
                return port;
            }
        };
        String password = server.password();
        return new RedisConnectionDetails() {
            @Override
            public String getPassword() {
                return password;
            }

            @Override
            public Standalone getStandalone() {
                return where;
            }
        };
    }

    static RedisConnectionDetails sentinel(RlockdReplicated r, String password) {
        List<Node> nodes = r.sentinelPorts().stream().map(p -> new Node(r.primary().host(), p)).toList();
        String master = r.masterName();
        String pw = password.isEmpty() ? null : password;
        Sentinel sentinel = new Sentinel() {
            @Override
            public int getDatabase() {
                return 0;
            }

            @Override
            public String getMaster() {
                return master;
            }

            @Override
            public List<Node> getNodes() {
                return nodes;
            }

            @Override
            public String getUsername() {
                return null;
            }

            @Override
            public String getPassword() {
                return null; // the Sentinels ask none
            }
        };
        return new RedisConnectionDetails() {
            @Override
            public String getPassword() {
                return pw;
            }

            @Override
            public Sentinel getSentinel() {
                return sentinel;
            }
        };
    }

    static RedisConnectionDetails cluster(RlockdCluster c, String password) {
        List<Node> nodes = c.nodes().stream().map(n -> new Node(n.host(), n.port())).toList();
        String pw = password.isEmpty() ? null : password;
        return new RedisConnectionDetails() {
            @Override
            public String getPassword() {
                return pw;
            }

            @Override
            public Cluster getCluster() {
                return () -> nodes;
            }
        };
    }
}
