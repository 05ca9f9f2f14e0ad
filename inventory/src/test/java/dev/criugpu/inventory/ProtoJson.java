package dev.criugpu.inventory;

import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Our decoded messages in the shape crit prints them (field names, enum names, integers as BigInteger, unsigned types unsigned), and crit's
 * JSON normalised to the same shape (hex strings to numbers, crit's task-state words to numbers).
 */
final class ProtoJson {
    /** crit prints TaskCoreEntry.task_state with its "gen" dictionary (criu's TASK_* values). */
    private static final Map<String, BigInteger> TASK_STATES = Map.of("Alive", BigInteger.valueOf(1),
            "Dead", BigInteger.valueOf(2), "Stopped", BigInteger.valueOf(3), "Zombie", BigInteger.valueOf(6));

    private ProtoJson() {
    }

    static Map<String, Object> toMap(Message m) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<FieldDescriptor, Object> e : m.getAllFields().entrySet()) {
            FieldDescriptor f = e.getKey();
            if (f.isRepeated()) {
                List<Object> l = new ArrayList<>();
                for (Object v : (List<?>) e.getValue()) l.add(scalar(f, v));
                out.put(f.getName(), l);
            } else {
                out.put(f.getName(), scalar(f, e.getValue()));
            }
        }
        return out;
    }

    private static Object scalar(FieldDescriptor f, Object v) {
        return switch (f.getJavaType()) {
            case MESSAGE -> toMap((Message) v);
            case ENUM -> ((EnumValueDescriptor) v).getName();
            case INT, LONG -> switch (f.getType()) {
                case UINT32, FIXED32 -> BigInteger.valueOf(Integer.toUnsignedLong((Integer) v));
                case UINT64, FIXED64 -> new BigInteger(Long.toUnsignedString((Long) v));
                default -> BigInteger.valueOf(((Number) v).longValue());
            };
            default -> v;
        };
    }

    /** crit JSON normalised: "0x.." strings become numbers, task_state words become numbers. */
    static Object normalise(String key, Object v) {
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            m.forEach((k, val) -> out.put((String) k, normalise((String) k, val)));
            return out;
        }
        if (v instanceof List<?> l) return l.stream().map(x -> normalise(key, x)).toList();
        if (v instanceof String s && s.startsWith("0x")) return new BigInteger(s.substring(2), 16);
        if ("task_state".equals(key) && v instanceof String s && TASK_STATES.containsKey(s)) return TASK_STATES.get(s);
        return v;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> normaliseEntry(Object critEntry) {
        return (Map<String, Object>) normalise("", critEntry);
    }
}
