package dev.criugpu.it.inventory;

import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A message our reader decoded, in the shape {@code crit show} prints it once parsed by {@link Json}: fields that
 * are set, under their .proto names; nested messages as objects; repeated fields as arrays; enums by value
 * name; integers as {@link BigInteger} (unsigned types unsigned). {@code equals} against crit's entry then
 * compares every field both tools see. Only the field types of the images compared here are handled; crit's
 * special renderings (hex, IP addresses, device numbers) are not, and a field needing one fails loudly.
 */
final class CritForm {
    private CritForm() {
    }

    static Map<String, Object> of(Message message) {
        if (!message.getUnknownFields().asMap().isEmpty()) {
            throw new AssertionError(message.getDescriptorForType().getName() + " has fields our .proto does not "
                    + "declare (numbers " + message.getUnknownFields().asMap().keySet() + "): crit would show them");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<FieldDescriptor, Object> e : message.getAllFields().entrySet()) {
            FieldDescriptor field = e.getKey();
            if (field.isRepeated()) {
                List<Object> values = new ArrayList<>();
                for (Object v : (List<?>) e.getValue()) values.add(scalar(field, v));
                out.put(field.getName(), values);
            } else {
                out.put(field.getName(), scalar(field, e.getValue()));
            }
        }
        return out;
    }

    private static Object scalar(FieldDescriptor field, Object v) {
        return switch (field.getType()) {
            case MESSAGE -> of((Message) v);
            case ENUM -> ((EnumValueDescriptor) v).getName();
            case BOOL, STRING -> v;
            case UINT32, FIXED32 -> BigInteger.valueOf(Integer.toUnsignedLong((Integer) v));
            case INT32, SINT32, SFIXED32 -> BigInteger.valueOf((Integer) v);
            case UINT64, FIXED64 -> new BigInteger(Long.toUnsignedString((Long) v));
            case INT64, SINT64, SFIXED64 -> BigInteger.valueOf((Long) v);
            default -> throw new AssertionError("field " + field.getFullName() + " of type " + field.getType()
                    + " has no crit rendering here");
        };
    }
}
