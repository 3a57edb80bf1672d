package org.groupspec.consumer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;

/**
 * Kafka's RangeAssignor, held at the start of {@code assign} while a control file exists: a harness hook to
 * freeze a leader between its JoinGroup answer and its SyncGroup (ConsumerCoordinator#onLeaderElected runs
 * the assignor in between), which no signal can aim at. Named "range", so it joins groups of plain range
 * members. The file is {@code groupspec.hold.file} from the consumer configuration; while the leader waits,
 * {@code FILE.inside} exists.
 */
public final class HoldingRangeAssignor implements ConsumerPartitionAssignor, Configurable {

    public static final String HOLD_FILE_CONFIG = "groupspec.hold.file";

    private final RangeAssignor delegate = new RangeAssignor();
    private Path hold;

    @Override
    public void configure(Map<String, ?> configs) {
        Object file = configs.get(HOLD_FILE_CONFIG);
        hold = file == null ? null : Paths.get(file.toString());
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        if (hold != null && Files.exists(hold)) {
            Path inside = Paths.get(hold + ".inside");
            try {
                Files.createFile(inside);
                while (Files.exists(hold)) {
                    Thread.sleep(50);
                }
                Files.deleteIfExists(inside);
            } catch (Exception e) {
                Thread.currentThread().interrupt();
            }
        }
        return delegate.assign(metadata, groupSubscription);
    }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        return delegate.supportedProtocols();
    }

    @Override
    public String name() {
        return delegate.name();
    }
}
