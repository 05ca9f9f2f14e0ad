package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.state.CudaState;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/**
 * One driver call the agent makes for criu: its word on the line, how its argument and its reply travel, and what
 * it does with the agent's backend. Adding a call is one constant here (and the {@link CudaBackend} method that
 * criu's side sends it from). criu's side encodes a call and decodes its reply through its {@code AgentOp}, the agent
 * dispatches it through the same {@code AgentOp}; the lines that carry them are {@link AgentProtocol}'s.
 */
final class AgentOp<A, R> {
    static final String NO_PAIRS = "-";

    private static final Map<String, AgentOp<?, ?>> BY_WORD = new LinkedHashMap<>();

    static final AgentOp<Void, OptionalInt> RESTORE_TID = new AgentOp<>("restore-tid", Codec.NONE, Codec.TID,
            (b, pid, none) -> b.restoreThread(pid));
    static final AgentOp<Void, CudaState> STATE = new AgentOp<>("state", Codec.NONE, Codec.STATE, (b, pid, none) -> b.state(pid));
    /** The argument: the timeout in ms. */
    static final AgentOp<Integer, Void> LOCK = effect("lock", Codec.INT, CudaBackend::lock);
    static final AgentOp<Void, Void> CHECKPOINT = effect("checkpoint", Codec.NONE, (b, pid, none) -> b.checkpoint(pid));
    /** The argument: the GPU pairs, {@code old=new,...} or {@value #NO_PAIRS}. */
    static final AgentOp<List<GpuPair>, Void> RESTORE = effect("restore", Codec.PAIRS, CudaBackend::restore);
    static final AgentOp<Void, Void> UNLOCK = effect("unlock", Codec.NONE, (b, pid, none) -> b.unlock(pid));
    /** For the agent's own process: the pid is 0. */
    static final AgentOp<Void, Void> PREPARE_RESTORE = effect("prepare-restore", Codec.NONE, (b, pid, none) -> b.prepareRestore());

    /** How an argument or a reply travels: one word, or nothing ({@code null}). */
    interface Codec<T> {
        String encode(T value);

        /** {@code word} is null where the line has none; an {@link IllegalArgumentException} where it is not a T. */
        T decode(String word);

        /** No word at all. */
        Codec<Void> NONE = new Codec<>() {
            @Override
            public String encode(Void value) {
                return null;
            }

            @Override
            public Void decode(String word) {
                return null;
            }
        };
        Codec<Integer> INT = of(i -> Integer.toString(i), Integer::parseInt);
        Codec<OptionalInt> TID = of(t -> t.isPresent() ? Integer.toString(t.getAsInt()) : "none",
                w -> w.equals("none") ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(w)));
        Codec<CudaState> STATE = of(CudaState::word, w -> CudaState.ofWord(w).orElseThrow(() ->
                new IllegalArgumentException("'" + w + "' is not a state")));
        Codec<List<GpuPair>> PAIRS = of(AgentOp::pairs, AgentOp::parsePairs);

        static <T> Codec<T> of(java.util.function.Function<T, String> encode, java.util.function.Function<String, T> decode) {
            return new Codec<>() {
                @Override
                public String encode(T value) {
                    return encode.apply(value);
                }

                @Override
                public T decode(String word) {
                    if (word == null) throw new IllegalArgumentException("a word is missing");
                    return decode.apply(word);
                }
            };
        }
    }

    /** What a call does with the agent's backend. */
    @FunctionalInterface
    interface Action<A, R> {
        R run(CudaBackend backend, int pid, A arg) throws CudaCallException;
    }

    /** The same for a call that returns nothing. */
    @FunctionalInterface
    interface Effect<A> {
        void run(CudaBackend backend, int pid, A arg) throws CudaCallException;
    }

    private final String word;
    private final Codec<A> arg;
    private final Codec<R> reply;
    private final Action<A, R> action;

    private AgentOp(String word, Codec<A> arg, Codec<R> reply, Action<A, R> action) {
        this.word = word;
        this.arg = arg;
        this.reply = reply;
        this.action = action;
        if (BY_WORD.put(word, this) != null) throw new IllegalStateException("two calls named " + word);
    }

    private static <A> AgentOp<A, Void> effect(String word, Codec<A> arg, Effect<A> effect) {
        return new AgentOp<>(word, arg, Codec.NONE, (b, pid, a) -> {
            effect.run(b, pid, a);
            return null;
        });
    }

    String word() {
        return word;
    }

    /** Every call, in declaration order. */
    static Map<String, AgentOp<?, ?>> all() {
        return Collections.unmodifiableMap(BY_WORD);
    }

    static AgentOp<?, ?> named(String word) {
        AgentOp<?, ?> op = BY_WORD.get(word);
        if (op == null) throw new IllegalArgumentException("unknown call " + word);
        return op;
    }

    /** criu's side: the line that asks for this call. */
    AgentProtocol.Call call(long id, int pid, A argument) {
        return new AgentProtocol.Call(id, word, pid, arg.encode(argument));
    }

    /** criu's side: the value of an {@code ok} reply (null where the call returns nothing). */
    R reply(String value) {
        return reply.decode(value);
    }

    /** The agent's side: makes the call on {@code backend}; the value its {@code ok} reply carries, or null. */
    String serve(CudaBackend backend, int pid, String argument) throws CudaCallException {
        return reply.encode(action.run(backend, pid, arg.decode(argument)));
    }

    static String pairs(List<GpuPair> pairs) {
        return pairs.isEmpty() ? NO_PAIRS : pairs.stream().map(GpuPair::toString).collect(Collectors.joining(","));
    }

    static List<GpuPair> parsePairs(String text) {
        List<GpuPair> out = new ArrayList<>();
        if (text.equals(NO_PAIRS)) return out;
        for (String p : text.split(",")) {
            String[] two = p.split("=");
            if (two.length != 2) throw new IllegalArgumentException("'" + p + "' is not old=new");
            out.add(new GpuPair(GpuUuid.parse(two[0]), GpuUuid.parse(two[1])));
        }
        return out;
    }
}
