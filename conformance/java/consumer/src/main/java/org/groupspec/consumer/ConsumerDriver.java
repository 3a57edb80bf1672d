package org.groupspec.consumer;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * One Apache Kafka Java consumer as a groupspec conformance driver.
 *
 * <p>Command line: the contract of the Python drivers (conformance/drivers/common.py): {@code --bootstrap
 * --group --topic (repeatable) --member --assignor --events --session-timeout-ms --heartbeat-interval-ms
 * --poll-ms --max-records -X key=value}. {@code -X} keys are Kafka consumer configuration names
 * ({@code group.instance.id}, {@code enable.auto.commit}, {@code group.protocol}, {@code group.remote.assignor},
 * {@code max.poll.interval.ms}, ...). With {@code group.protocol=consumer} (KIP-848) the client refuses
 * {@code session.timeout.ms}, {@code heartbeat.interval.ms} and {@code partition.assignment.strategy}
 * (ConsumerConfig#checkGroupRemoteAssignor and friends): they are left out, the broker decides them, and
 * {@code --assignor} (uniform or range) becomes {@code group.remote.assignor}.
 *
 * <p>Trace: one JSON line per event in {@code --events}, flushed at once, names and fields as
 * model/events.py: startup_complete, partitions_assigned / revoked / lost (from the
 * ConsumerRebalanceListener), records_consumed and offsets_committed (the loop of Kafka's
 * VerifiableConsumer#onRecordsReceived: summary per partition, then a synchronous commit of maxOffset + 1;
 * with {@code enable.auto.commit=true} no explicit commit is made and no offsets_committed is written),
 * shutdown_complete. Every event carries member, group, protocol (eager, cooperative or consumer), assignor,
 * client ("kafka-clients VERSION"), instance_id when static, and member_id and generation as
 * {@code KafkaConsumer#groupMetadata()} gives them at that moment (ConsumerCoordinator#onJoinComplete sets it
 * before the listener runs; for the consumer protocol the generation is the member epoch).
 *
 * <p>Stopping: SIGTERM / SIGINT run a shutdown hook that wakes the poll loop up and waits until the
 * consumer is closed (a clean close leaves the group: LeaveGroup, or a static member's session stays);
 * SIGKILL is the crash. Stalling the application thread only: while the file {@code EVENTS.stall} exists the
 * loop does not poll (the heartbeat thread, or the consumer protocol's background thread, goes on, until
 * max.poll.interval.ms makes the client leave); SIGSTOP would stop both.
 */
public final class ConsumerDriver {

    private final Map<String, String> ctx = new LinkedHashMap<>();
    private final Writer out;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final List<String> topics;
    private final boolean autoCommit;
    private final Path stallFile;
    private final long pollMs;
    private final AtomicBoolean stopping = new AtomicBoolean(false);
    private final CountDownLatch closed = new CountDownLatch(1);

    private ConsumerDriver(Args a) throws IOException {
        this.topics = a.topics;
        this.pollMs = a.pollMs;
        this.stallFile = Paths.get(a.events + ".stall");
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.member);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(a.maxRecords));
        p.putAll(a.options);
        boolean consumerProtocol = "consumer".equalsIgnoreCase(p.getProperty(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic"));
        String protocol;
        if (consumerProtocol) {
            p.putIfAbsent(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, a.assignor);
            protocol = "consumer";
        } else {
            p.putIfAbsent(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(a.sessionTimeoutMs));
            p.putIfAbsent(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, Integer.toString(a.heartbeatIntervalMs));
            p.putIfAbsent(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(a.assignor));
            protocol = a.assignor.equals("cooperative-sticky") ? "cooperative" : "eager";
        }
        this.autoCommit = Boolean.parseBoolean(p.getProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG));
        ctx.put("member", a.member);
        ctx.put("group", a.group);
        ctx.put("protocol", protocol);
        ctx.put("assignor", consumerProtocol ? p.getProperty(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG) : a.assignor);
        ctx.put("client", "kafka-clients " + AppInfoParser.getVersion());
        String instance = p.getProperty(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        if (instance != null && !instance.isEmpty()) {
            ctx.put("instance_id", instance);
        }
        this.out = new OutputStreamWriter(new FileOutputStream(a.events, true), StandardCharsets.UTF_8);
        this.consumer = new KafkaConsumer<>(p);
    }

    static String assignorClass(String name) {
        switch (name) {
            case "range": return RangeAssignor.class.getName();
            case "roundrobin": return RoundRobinAssignor.class.getName();
            case "sticky": return StickyAssignor.class.getName();
            case "cooperative-sticky": return CooperativeStickyAssignor.class.getName();
            default: throw new IllegalArgumentException("unknown assignor " + name
                    + "; known: range, roundrobin, sticky, cooperative-sticky");
        }
    }

    // ---------------------------------------------------------------------------------------------- events

    private synchronized void write(String name, String fields) {
        StringBuilder sb = new StringBuilder(256);
        sb.append("{\"name\":").append(q(name)).append(",\"timestamp\":").append(System.currentTimeMillis());
        for (Map.Entry<String, String> e : ctx.entrySet()) {
            sb.append(',').append(q(e.getKey())).append(':').append(q(e.getValue()));
        }
        identity(sb);
        if (!fields.isEmpty()) {
            sb.append(',').append(fields);
        }
        sb.append("}\n");
        try {
            out.write(sb.toString());
            out.flush();
        } catch (IOException e) {
            throw new RuntimeException("cannot write the events file", e);
        }
    }

    private void identity(StringBuilder sb) {
        ConsumerGroupMetadata meta;
        try {
            meta = consumer.groupMetadata();
        } catch (RuntimeException e) {
            return; // closed, or not in a group yet
        }
        String memberId = meta.memberId();
        if (memberId != null && !memberId.isEmpty()) {
            sb.append(",\"member_id\":").append(q(memberId));
        }
        if (meta.generationId() >= 0) {
            sb.append(",\"generation\":").append(meta.generationId());
        }
    }

    static String q(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<TopicPartition> sorted = new ArrayList<>(tps);
        sorted.sort((x, y) -> x.topic().equals(y.topic())
                ? Integer.compare(x.partition(), y.partition()) : x.topic().compareTo(y.topic()));
        StringBuilder sb = new StringBuilder("\"partitions\":[");
        for (int i = 0; i < sorted.size(); i++) {
            TopicPartition tp = sorted.get(i);
            sb.append(i == 0 ? "" : ",").append("{\"topic\":").append(q(tp.topic()))
                    .append(",\"partition\":").append(tp.partition()).append('}');
        }
        return sb.append(']').toString();
    }

    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            write("partitions_revoked", partitions(partitions));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            write("partitions_assigned", partitions(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            write("partitions_lost", partitions(partitions));
        }
    }

    // ---------------------------------------------------------------------------------------------- loop

    private boolean run() {
        consumer.subscribe(topics, new Listener());
        List<String> sortedTopics = new ArrayList<>(topics);
        sortedTopics.sort(null);
        StringBuilder sub = new StringBuilder("\"subscription\":[");
        for (int i = 0; i < sortedTopics.size(); i++) {
            sub.append(i == 0 ? "" : ",").append(q(sortedTopics.get(i)));
        }
        sub.append("],\"pid\":").append(ProcessHandle.current().pid());
        write("startup_complete", sub.toString());
        boolean failed = false;
        try {
            while (!stopping.get()) {
                if (Files.exists(stallFile)) {
                    Thread.sleep(50); // the application thread stalls; the heartbeat thread does not
                    continue;
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(pollMs));
                if (!records.isEmpty()) {
                    consumed(records);
                }
            }
        } catch (WakeupException | InterruptException e) {
            // the shutdown hook woke us up
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (KafkaException e) {
            System.err.println("groupspec driver: fatal: " + e);
            failed = true;
        }
        try {
            consumer.close();
        } catch (KafkaException e) {
            System.err.println("groupspec driver: close failed: " + e);
            failed = true;
        }
        write("shutdown_complete", "\"failed\":" + failed);
        return !failed;
    }

    private void consumed(ConsumerRecords<byte[], byte[]> records) {
        Map<TopicPartition, long[]> summary = new TreeMap<>((x, y) -> x.topic().equals(y.topic())
                ? Integer.compare(x.partition(), y.partition()) : x.topic().compareTo(y.topic()));
        for (ConsumerRecord<byte[], byte[]> r : records) {
            long[] s = summary.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
                    k -> new long[] {0, Long.MAX_VALUE, Long.MIN_VALUE});
            s[0]++;
            s[1] = Math.min(s[1], r.offset());
            s[2] = Math.max(s[2], r.offset());
        }
        StringBuilder sb = new StringBuilder("\"count\":").append(records.count()).append(",\"partitions\":[");
        StringBuilder offsets = new StringBuilder("\"offsets\":[");
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        int i = 0;
        for (Map.Entry<TopicPartition, long[]> e : summary.entrySet()) {
            TopicPartition tp = e.getKey();
            long[] s = e.getValue();
            String sep = i++ == 0 ? "" : ",";
            sb.append(sep).append("{\"topic\":").append(q(tp.topic())).append(",\"partition\":").append(tp.partition())
                    .append(",\"count\":").append(s[0]).append(",\"minOffset\":").append(s[1])
                    .append(",\"maxOffset\":").append(s[2]).append('}');
            offsets.append(sep).append("{\"topic\":").append(q(tp.topic())).append(",\"partition\":")
                    .append(tp.partition()).append(",\"offset\":").append(s[2] + 1).append('}');
            commit.put(tp, new OffsetAndMetadata(s[2] + 1));
        }
        write("records_consumed", sb.append(']').toString());
        if (autoCommit) {
            return;
        }
        offsets.append(']');
        try {
            consumer.commitSync(commit);
            write("offsets_committed", offsets + ",\"success\":true");
        } catch (WakeupException | InterruptException e) {
            write("offsets_committed", offsets + ",\"success\":false,\"error\":" + q(e.getClass().getSimpleName()));
            throw e;
        } catch (KafkaException e) {
            write("offsets_committed", offsets + ",\"success\":false,\"error\":"
                    + q(e.getClass().getSimpleName() + ": " + e.getMessage()));
        }
    }

    // ---------------------------------------------------------------------------------------------- main

    static final class Args {
        String bootstrap;
        String group;
        final List<String> topics = new ArrayList<>();
        String member;
        String assignor = "range";
        String events;
        int sessionTimeoutMs = 6000;
        int heartbeatIntervalMs = 500;
        long pollMs = 200;
        int maxRecords = 100;
        final Map<String, String> options = new LinkedHashMap<>();

        static Args parse(String[] argv) {
            Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                String flag = argv[i];
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = argv[++i];
                switch (flag) {
                    case "--bootstrap": a.bootstrap = v; break;
                    case "--group": a.group = v; break;
                    case "--topic": a.topics.add(v); break;
                    case "--member": a.member = v; break;
                    case "--assignor": a.assignor = v; break;
                    case "--events": a.events = v; break;
                    case "--session-timeout-ms": a.sessionTimeoutMs = Integer.parseInt(v); break;
                    case "--heartbeat-interval-ms": a.heartbeatIntervalMs = Integer.parseInt(v); break;
                    case "--poll-ms": a.pollMs = Long.parseLong(v); break;
                    case "--max-records": a.maxRecords = Integer.parseInt(v); break;
                    case "-X": {
                        int eq = v.indexOf('=');
                        if (eq <= 0) {
                            throw new IllegalArgumentException("-X " + v + ": expected KEY=VALUE");
                        }
                        a.options.put(v.substring(0, eq), v.substring(eq + 1));
                        break;
                    }
                    default: throw new IllegalArgumentException("unknown argument " + flag);
                }
            }
            if (a.bootstrap == null || a.group == null || a.member == null || a.events == null || a.topics.isEmpty()) {
                throw new IllegalArgumentException("--bootstrap, --group, --topic, --member and --events are required");
            }
            return a;
        }
    }

    public static void main(String[] argv) throws Exception {
        Args args;
        try {
            args = Args.parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("groupspec java driver: " + e.getMessage());
            System.exit(2);
            return;
        }
        ConsumerDriver driver = new ConsumerDriver(args);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (!driver.stopping.compareAndSet(false, true)) {
                return; // the driver is exiting on its own (System.exit below): keep its exit code
            }
            driver.consumer.wakeup();
            try {
                driver.closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            // A clean close is a success: exit 0 as the Python drivers do, not the JVM's 143 for SIGTERM.
            Runtime.getRuntime().halt(0);
        }, "groupspec-shutdown"));
        boolean ok = false;
        try {
            ok = driver.run();
        } finally {
            driver.out.close();
            driver.closed.countDown();
        }
        if (!ok && driver.stopping.compareAndSet(false, true)) {
            System.exit(1);
        }
    }
}
