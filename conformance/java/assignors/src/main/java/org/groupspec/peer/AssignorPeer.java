package org.groupspec.peer;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.AppInfoParser;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Runs Apache Kafka's client-side assignors on groupspec assignment problems, one JSON line each.
 *
 * <p><b>Protocol.</b> On start the peer writes one line {@code {"ready": true, "kafka_clients": ..., "java": ...}}.
 * Then each line on stdin is one assignment problem in the {@code groupspec assign} format
 * ({@code strategy}, {@code topics}, {@code members}; docs/assign.md), optionally with
 * {@code "repeat": n} (run the assignor n times, each on a new instance, to time it warm) and
 * {@code "gc": true} (collect garbage before each timed run, so that the assignor is not charged
 * for the request's parsing garbage). Each answer is one line:
 * <pre>
 *   {"assignment": {member: [{"topic", "partition"}...]}, "transferring": [...],
 *    "millis": m, "cpu_millis": c, "process_cpu_millis": p, "prepare_millis": q, "gc_millis": g,
 *    "runs": [m1, ...],
 *    "builder": "constrained" | "general" | null,
 *    "transferring_source": "partitionsTransferringOwnership" | "derived" | null, "notes": [...]}
 * </pre>
 * or {@code {"error": {"kind": "request" | "assignor", "exception": ..., "message": ..., "at": [...]}}}
 * when the line was malformed or the assignor threw (the peer then goes on with the next line).
 * {@code millis} is the wall time of {@code assign(Cluster, GroupSubscription)} in the fastest run,
 * {@code cpu_millis} the CPU time of the calling thread in that run (garbage collection and JIT
 * compilation run on other threads), {@code process_cpu_millis} the CPU time of the whole JVM in
 * that run; {@code prepare_millis} is the time from reading the line to the first run (parsing,
 * building the metadata and the subscriptions), {@code gc_millis} the time spent in the requested
 * collections.
 *
 * <p><b>What the assignor sees</b> is what a Java group leader would see
 * ({@code ConsumerCoordinator.onLeaderElected}, kafka-clients 4.1.1):
 * <ul>
 *   <li>each member's {@link Subscription} is built as that member's client builds it
 *       ({@code ConsumerCoordinator.metadata()}): topics, the user data of the member's own assignor
 *       instance (for {@code sticky}: its last assignment and generation, set through
 *       {@code onAssignment} and read back by {@code subscriptionUserData}; for
 *       {@code cooperative-sticky}: its generation), the owned partitions (empty for the eager
 *       {@code sticky}: an eager member revokes everything before it joins), the generation and the
 *       rack; then serialized with {@link ConsumerProtocol} (latest version) and deserialized
 *       again, and the group instance id set, exactly as the leader does with each JoinGroup member;
 *   <li>the subscriptions go into a {@link HashMap} keyed by member id, filled in the order of
 *       the request's {@code members} (the leader's map, filled in JoinGroup response order);
 *   <li>the metadata is a {@link Cluster} of one broker (no rack) leading every partition
 *       {@code 0..n-1} of every topic, so rack-aware assignment (KIP-881) is never chosen;
 *   <li>a new assignor instance per run ({@code AbstractStickyAssignor.maxGeneration} is an
 *       instance field never reset).
 * </ul>
 *
 * <p><b>transferring</b> (cooperative-sticky only) is what {@code CooperativeStickyAssignor}
 * withheld. When the constrained builder ran, it is read from the assignor
 * ({@code AbstractStickyAssignor.partitionsTransferringOwnership()}, the map that
 * {@code adjustAssignment} applied). When the general builder ran, Java computes the map in a
 * private method and keeps it nowhere, so it is derived: both builders assign every partition of
 * every subscribed topic, so the partitions of subscribed topics that the final assignment gives
 * to nobody are exactly the ones {@code adjustAssignment} removed. The peer cross-checks what it
 * can (the derived set equals the assignor's map after the constrained builder; every derived
 * partition was claimed as owned by some member) and reports any mismatch in {@code notes}.
 */
public final class AssignorPeer {
    private static final String GROUP_ID = "groupspec-peer";
    private static final Node BROKER = new Node(0, "127.0.0.1", 9092);
    private static final Node[] REPLICAS = {BROKER};

    private AssignorPeer() {
    }

    public static void main(String[] args) throws IOException {
        // The protocol owns the real stdout; anything else printing to System.out goes to stderr.
        OutputStream out = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);

        StringBuilder hello = new StringBuilder("{\"ready\":true,\"kafka_clients\":");
        Json.quote(hello, AppInfoParser.getVersion());
        hello.append(",\"java\":");
        Json.quote(hello, System.getProperty("java.version"));
        hello.append('}');
        write(out, hello);

        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank())
                continue;
            StringBuilder reply;
            long received = System.nanoTime();
            try {
                reply = answer(Json.parse(line), received);
            } catch (Json.BadRequest e) {
                reply = error("request", e, false);
            } catch (RuntimeException | StackOverflowError e) {
                reply = error("assignor", e, true);
            } catch (OutOfMemoryError e) {
                reply = error("assignor", e, false);
            }
            write(out, reply);
        }
    }

    private static void write(OutputStream out, StringBuilder line) throws IOException {
        line.append('\n');
        out.write(line.toString().getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    private static StringBuilder error(String kind, Throwable e, boolean withStack) {
        StringBuilder sb = new StringBuilder("{\"error\":{\"kind\":");
        Json.quote(sb, kind);
        sb.append(",\"exception\":");
        Json.quote(sb, e.getClass().getName());
        sb.append(",\"message\":");
        Json.quote(sb, String.valueOf(e.getMessage()));
        sb.append(",\"at\":[");
        if (withStack) {
            StackTraceElement[] stack = e.getStackTrace();
            for (int i = 0; i < Math.min(stack.length, 8); i++) {
                if (i > 0)
                    sb.append(',');
                Json.quote(sb, stack[i].toString());
            }
        }
        sb.append("]}}");
        return sb;
    }

    // ---------------------------------------------------------------------------------------------
    // One problem
    // ---------------------------------------------------------------------------------------------

    private static final class Member {
        final String memberId;
        final String instanceId;
        final List<String> topics;
        final List<TopicPartition> owned;
        final int generation;
        final String rack;

        Member(String memberId, String instanceId, List<String> topics, List<TopicPartition> owned, int generation,
               String rack) {
            this.memberId = memberId;
            this.instanceId = instanceId;
            this.topics = topics;
            this.owned = owned;
            this.generation = generation;
            this.rack = rack;
        }
    }

    static StringBuilder answer(Object request, long received) {
        Map<String, Object> req = object(request, "the request");
        String strategy = string(req.get("strategy"), "strategy", false);
        newAssignor(strategy); // validates the name
        Map<String, Integer> partitionsPerTopic = topics(req.get("topics"));
        List<Member> members = members(req.get("members"));
        int repeat = 1;
        if (req.containsKey("repeat"))
            repeat = integer(req.get("repeat"), "repeat", 1, 1000);
        boolean collectGarbage = Boolean.TRUE.equals(req.get("gc"));
        request = null;
        req = null; // the parsed JSON is garbage from here on

        Cluster cluster = cluster(partitionsPerTopic);
        List<ByteBuffer> wire = new ArrayList<>(members.size());
        for (Member m : members)
            wire.add(ConsumerProtocol.serializeSubscription(memberSubscription(strategy, m)));

        Map<String, Subscription> leaderView = leaderSubscriptions(members, wire);
        double prepareMillis = (System.nanoTime() - received) / 1e6;

        List<Double> runs = new ArrayList<>(repeat);
        List<Double> cpuRuns = new ArrayList<>(repeat);
        List<Double> processCpuRuns = new ArrayList<>(repeat);
        double gcMillis = 0;
        GroupAssignment result = null;
        ConsumerPartitionAssignor assignor = null;
        for (int r = 0; r < repeat; r++) {
            // The sticky assignors read user data through the buffer's position; they rewind it
            // themselves before a second read (prepopulateCurrentAssignments), so do we before a run.
            for (Subscription s : leaderView.values())
                if (s.userData() != null)
                    s.userData().rewind();
            assignor = newAssignor(strategy);
            GroupSubscription groupSubscription = new GroupSubscription(leaderView);
            if (collectGarbage) {
                long gcStart = System.nanoTime();
                System.gc(); // do not charge the assignor for collecting the request's garbage
                gcMillis += (System.nanoTime() - gcStart) / 1e6;
            }
            long processCpu = processCpuNanos();
            long cpu = THREADS.getCurrentThreadCpuTime();
            long start = System.nanoTime();
            result = assignor.assign(cluster, groupSubscription);
            long elapsed = System.nanoTime() - start;
            cpuRuns.add((THREADS.getCurrentThreadCpuTime() - cpu) / 1e6);
            processCpuRuns.add((processCpuNanos() - processCpu) / 1e6);
            runs.add(elapsed / 1e6);
        }
        return reply(strategy, partitionsPerTopic, members, leaderView, assignor, result,
                new Timings(runs, cpuRuns, processCpuRuns, prepareMillis, gcMillis));
    }

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** CPU time of the whole JVM (all threads: the assignor, GC, JIT), or -1 where not available. */
    private static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean)
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        return -1;
    }

    /** Per run: wall, this thread's CPU, the JVM's CPU (ms); and the time to read and prepare the request. */
    private static final class Timings {
        final List<Double> wall;
        final List<Double> cpu;
        final List<Double> processCpu;
        final double prepare;
        final double gc;

        Timings(List<Double> wall, List<Double> cpu, List<Double> processCpu, double prepare, double gc) {
            this.wall = wall;
            this.cpu = cpu;
            this.processCpu = processCpu;
            this.prepare = prepare;
            this.gc = gc;
        }

        /** The index of the run with the least wall time. */
        int best() {
            int best = 0;
            for (int i = 1; i < wall.size(); i++)
                if (wall.get(i) < wall.get(best))
                    best = i;
            return best;
        }
    }

    static ConsumerPartitionAssignor newAssignor(String strategy) {
        switch (strategy) {
            case "range":
                return new RangeAssignor();
            case "roundrobin":
                return new RoundRobinAssignor();
            case "sticky":
                return new StickyAssignor();
            case "cooperative-sticky":
                return new CooperativeStickyAssignor();
            default:
                throw new Json.BadRequest("strategy: unknown strategy \"" + strategy
                        + "\"; known: range, roundrobin, sticky, cooperative-sticky");
        }
    }

    /** One broker leading every partition 0..n-1 of every topic with n >= 1. */
    static Cluster cluster(Map<String, Integer> partitionsPerTopic) {
        List<PartitionInfo> partitions = new ArrayList<>();
        for (Map.Entry<String, Integer> e : partitionsPerTopic.entrySet())
            for (int p = 0; p < e.getValue(); p++)
                partitions.add(new PartitionInfo(e.getKey(), p, BROKER, REPLICAS, REPLICAS));
        return new Cluster("groupspec-peer", List.of(BROKER), partitions, Set.of(), Set.of());
    }

    /** The Subscription the member's own client would put in its JoinGroup request. */
    static Subscription memberSubscription(String strategy, Member m) {
        ConsumerPartitionAssignor own = newAssignor(strategy);
        boolean hadAssignment = !m.owned.isEmpty() || m.generation >= 0;
        if (hadAssignment) {
            // ConsumerCoordinator.onJoinComplete hands each assignment to the member's assignor.
            own.onAssignment(new Assignment(m.owned),
                    new ConsumerGroupMetadata(GROUP_ID, m.generation, m.memberId, Optional.ofNullable(m.instanceId)));
        }
        ByteBuffer userData = own.subscriptionUserData(new HashSet<>(m.topics));
        // StickyAssignor supports only EAGER: the member revoked everything in onJoinPrepare, so
        // subscriptions.assignedPartitionsList() is empty when metadata() builds the subscription.
        List<TopicPartition> ownedField = strategy.equals("sticky") ? List.of() : m.owned;
        return new Subscription(m.topics, userData, ownedField, m.generation, Optional.ofNullable(m.rack));
    }

    /** The leader's map: each JoinGroup member's metadata decoded, with its group instance id. */
    static Map<String, Subscription> leaderSubscriptions(List<Member> members, List<ByteBuffer> wire) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (int i = 0; i < members.size(); i++) {
            Subscription s = ConsumerProtocol.deserializeSubscription(wire.get(i).duplicate());
            s.setGroupInstanceId(Optional.ofNullable(members.get(i).instanceId));
            subscriptions.put(members.get(i).memberId, s);
        }
        return subscriptions;
    }

    private static StringBuilder reply(String strategy, Map<String, Integer> partitionsPerTopic, List<Member> members,
                                       Map<String, Subscription> leaderView, ConsumerPartitionAssignor assignor,
                                       GroupAssignment result, Timings timings) {
        Map<String, List<TopicPartition>> assignment = new TreeMap<>();
        for (Map.Entry<String, Assignment> e : result.groupAssignment().entrySet())
            assignment.put(e.getKey(), e.getValue().partitions());

        String builder = null;
        Withheld transferring = Withheld.NONE;
        List<String> notes = new ArrayList<>();
        if (assignor instanceof AbstractStickyAssignor) {
            Map<TopicPartition, String> field = ((AbstractStickyAssignor) assignor).partitionsTransferringOwnership();
            builder = field == null ? "general" : "constrained";
            if (assignor instanceof CooperativeStickyAssignor) {
                Set<TopicPartition> derived = unassigned(partitionsPerTopic, members, assignment);
                if (field != null) {
                    transferring = new Withheld(field.keySet(), "partitionsTransferringOwnership");
                    if (!derived.equals(field.keySet()))
                        notes.add("partitionsTransferringOwnership " + sorted(field.keySet())
                                + " differs from the partitions of subscribed topics assigned to nobody " + sorted(derived));
                } else {
                    transferring = new Withheld(derived, "derived");
                    Set<TopicPartition> claimed = new HashSet<>();
                    for (Subscription s : leaderView.values())
                        claimed.addAll(s.ownedPartitions());
                    for (TopicPartition tp : sorted(derived))
                        if (!claimed.contains(tp))
                            notes.add(tp + " is assigned to nobody but no member claimed it: not a withheld partition");
                }
            }
        }

        StringBuilder sb = new StringBuilder(64 + 40 * members.size());
        sb.append("{\"assignment\":{");
        boolean first = true;
        for (Map.Entry<String, List<TopicPartition>> e : assignment.entrySet()) {
            if (!first)
                sb.append(',');
            first = false;
            Json.quote(sb, e.getKey());
            sb.append(':');
            partitionList(sb, e.getValue());
        }
        sb.append("},\"transferring\":");
        partitionList(sb, sorted(transferring.partitions));
        int best = timings.best();
        sb.append(",\"millis\":").append(timings.wall.get(best));
        sb.append(",\"cpu_millis\":").append(timings.cpu.get(best));
        sb.append(",\"process_cpu_millis\":").append(timings.processCpu.get(best));
        sb.append(",\"prepare_millis\":").append(timings.prepare);
        sb.append(",\"gc_millis\":").append(timings.gc);
        sb.append(",\"runs\":[");
        for (int i = 0; i < timings.wall.size(); i++) {
            if (i > 0)
                sb.append(',');
            sb.append(timings.wall.get(i));
        }
        sb.append("],\"builder\":");
        if (builder == null)
            sb.append("null");
        else
            Json.quote(sb, builder);
        sb.append(",\"transferring_source\":");
        if (transferring.source == null)
            sb.append("null");
        else
            Json.quote(sb, transferring.source);
        sb.append(",\"notes\":[");
        for (int i = 0; i < notes.size(); i++) {
            if (i > 0)
                sb.append(',');
            Json.quote(sb, notes.get(i));
        }
        sb.append("]}");
        return sb;
    }

    private static final class Withheld {
        static final Withheld NONE = new Withheld(Set.of(), null);
        final Set<TopicPartition> partitions;
        final String source;

        Withheld(Set<TopicPartition> partitions, String source) {
            this.partitions = partitions;
            this.source = source;
        }
    }

    /** Partitions of topics some member subscribes to (with metadata) that no member is assigned. */
    private static Set<TopicPartition> unassigned(Map<String, Integer> partitionsPerTopic, List<Member> members,
                                                  Map<String, List<TopicPartition>> assignment) {
        Set<String> subscribed = new HashSet<>();
        for (Member m : members)
            subscribed.addAll(m.topics);
        Set<TopicPartition> assigned = new HashSet<>();
        for (List<TopicPartition> tps : assignment.values())
            assigned.addAll(tps);
        Set<TopicPartition> out = new HashSet<>();
        for (Map.Entry<String, Integer> e : partitionsPerTopic.entrySet()) {
            if (!subscribed.contains(e.getKey()))
                continue;
            for (int p = 0; p < e.getValue(); p++) {
                TopicPartition tp = new TopicPartition(e.getKey(), p);
                if (!assigned.contains(tp))
                    out.add(tp);
            }
        }
        return out;
    }

    private static final Comparator<TopicPartition> BY_TOPIC_PARTITION =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private static List<TopicPartition> sorted(Set<TopicPartition> tps) {
        List<TopicPartition> out = new ArrayList<>(tps);
        out.sort(BY_TOPIC_PARTITION);
        return out;
    }

    private static void partitionList(StringBuilder sb, List<TopicPartition> tps) {
        sb.append('[');
        for (int i = 0; i < tps.size(); i++) {
            if (i > 0)
                sb.append(',');
            TopicPartition tp = tps.get(i);
            sb.append("{\"topic\":");
            Json.quote(sb, tp.topic());
            sb.append(",\"partition\":").append(tp.partition()).append('}');
        }
        sb.append(']');
    }

    // ---------------------------------------------------------------------------------------------
    // Reading the request (the format of groupspec assign; the Python side has validated it already,
    // so these checks only keep a malformed line from turning into a confusing assignor failure)
    // ---------------------------------------------------------------------------------------------

    private static Map<String, Integer> topics(Object value) {
        Map<String, Object> raw = object(value, "topics");
        Map<String, Integer> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : raw.entrySet())
            out.put(e.getKey(), integer(e.getValue(), "topics[\"" + e.getKey() + "\"]", 0, Integer.MAX_VALUE));
        return out;
    }

    private static List<Member> members(Object value) {
        List<Object> raw = array(value, "members");
        List<Member> out = new ArrayList<>(raw.size());
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < raw.size(); i++) {
            String path = "members[" + i + "]";
            Map<String, Object> m = object(raw.get(i), path);
            String memberId = string(m.get("member_id"), path + ".member_id", false);
            if (!seen.add(memberId))
                throw new Json.BadRequest(path + ".member_id: duplicate member id \"" + memberId + "\"");
            String instanceId = string(m.get("instance_id"), path + ".instance_id", true);
            List<String> topics = new ArrayList<>();
            List<Object> rawTopics = array(m.get("topics"), path + ".topics");
            for (int t = 0; t < rawTopics.size(); t++)
                topics.add(string(rawTopics.get(t), path + ".topics[" + t + "]", false));
            List<TopicPartition> owned = new ArrayList<>();
            Object rawOwned = m.get("owned");
            if (rawOwned != null) {
                List<Object> claims = array(rawOwned, path + ".owned");
                for (int c = 0; c < claims.size(); c++) {
                    String cpath = path + ".owned[" + c + "]";
                    Map<String, Object> claim = object(claims.get(c), cpath);
                    owned.add(new TopicPartition(string(claim.get("topic"), cpath + ".topic", false),
                            integer(claim.get("partition"), cpath + ".partition", Integer.MIN_VALUE, Integer.MAX_VALUE)));
                }
            }
            int generation = -1;
            if (m.get("generation") != null)
                generation = integer(m.get("generation"), path + ".generation", -1, Integer.MAX_VALUE);
            String rack = string(m.get("rack"), path + ".rack", true);
            out.add(new Member(memberId, instanceId, Collections.unmodifiableList(topics), owned, generation, rack));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object value, String path) {
        if (!(value instanceof Map))
            throw new Json.BadRequest(path + ": expected an object");
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> array(Object value, String path) {
        if (!(value instanceof List))
            throw new Json.BadRequest(path + ": expected an array");
        return (List<Object>) value;
    }

    private static String string(Object value, String path, boolean nullable) {
        if (value == null && nullable)
            return null;
        if (!(value instanceof String))
            throw new Json.BadRequest(path + ": expected a string");
        return (String) value;
    }

    private static int integer(Object value, String path, long min, long max) {
        if (!(value instanceof Long))
            throw new Json.BadRequest(path + ": expected an integer");
        long v = (Long) value;
        if (v < min || v > max)
            throw new Json.BadRequest(path + ": " + v + " is out of range [" + min + ", " + max + "]");
        return (int) v;
    }
}
