package dev.criugpu.inventory.inspect;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class JsonWriterTest {
    /** A GPU UUID or file name from an image: JSON escapes for what a terminal would act on, so the text stays JSON. */
    @Test
    void controlCharactersAndReorderingMarksAreUnicodeEscapes() {
        String json = new JsonWriter().beginObject().name("uuid").value("GPU-\u001b[2J\u009b\u202e\u007f\"\\\t").endObject()
                .toString();
        assertEquals("{\n  \"uuid\": \"GPU-\\u001b[2J\\u009b\\u202e\\u007f\\\"\\\\\\t\"\n}", json);
    }
}
