package dev.rlockd;

import java.util.Optional;
import java.util.OptionalLong;

/** A fault that is set ({@link RlockdServer#faults()}), with how often it applied. */
public final class FaultInfo {
    private final long id;
    private final String kind;
    private final String params;
    private final Optional<String> command;
    private final Optional<String> key;
    private final Optional<String> client;
    private final OptionalLong clientId;
    private final Optional<String> channel;
    private final OptionalLong timesLeft;
    private final long hits;

    FaultInfo(long id, String kind, String params, Optional<String> command, Optional<String> key,
            Optional<String> client, OptionalLong clientId, Optional<String> channel, OptionalLong timesLeft,
            long hits) {
        this.id = id;
        this.kind = kind;
        this.params = params;
        this.command = command;
        this.key = key;
        this.client = client;
        this.clientId = clientId;
        this.channel = channel;
        this.timesLeft = timesLeft;
        this.hits = hits;
    }

    /** The id {@link RlockdServer#addFault(Fault)} returned. */
    public long id() {
        return id;
    }

    /** {@code error}, {@code latency}, {@code close}, {@code freeze}, {@code slowwrite}, {@code cutwrite},
     *  {@code dropmsg} or {@code delaymsg}. */
    public String kind() {
        return kind;
    }

    /** Its parameters as text ({@code "200 ms, jitter 0 ms"}, an error's message). */
    public String params() {
        return params;
    }

    public Optional<String> command() {
        return command;
    }

    public Optional<String> key() {
        return key;
    }

    /** The client name pattern. */
    public Optional<String> client() {
        return client;
    }

    public OptionalLong clientId() {
        return clientId;
    }

    public Optional<String> channel() {
        return channel;
    }

    /** Matches left before it removes itself (empty: until cleared). */
    public OptionalLong timesLeft() {
        return timesLeft;
    }

    /** How many times it applied. */
    public long hits() {
        return hits;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("FaultInfo[#").append(id).append(' ').append(kind);
        if (!params.isEmpty()) {
            b.append(' ').append(params);
        }
        command.ifPresent(c -> b.append(", command ").append(c));
        key.ifPresent(k -> b.append(", key ").append(k));
        client.ifPresent(c -> b.append(", client ").append(c));
        clientId.ifPresent(i -> b.append(", id ").append(i));
        channel.ifPresent(c -> b.append(", channel ").append(c));
        timesLeft.ifPresent(t -> b.append(", ").append(t).append(" left"));
        return b.append(", hits ").append(hits).append(']').toString();
    }
}
