package org.groupspec.peer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader and string escaper: enough for one request line of the peer protocol.
 *
 * <p>kafka-clients brings no JSON library to its users, and the peer's requests are plain
 * (objects, arrays, strings, integers, null), so a recursive-descent reader of RFC 8259 is
 * smaller than another dependency. Objects become {@link LinkedHashMap}s (a repeated key is an
 * error, as it is for groupspec's problem reader), arrays {@link ArrayList}s, integers
 * {@link Long}s, other numbers {@link Double}s.
 */
final class Json {
    /** A request line that is not valid JSON, or not of the expected shape. */
    static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadRequest(String message) {
            super(message);
        }
    }

    private static final int MAX_DEPTH = 64;

    private final String text;
    private int pos;

    private Json(String text) {
        this.text = text;
    }

    /** Parse one complete JSON value; trailing non-space characters are an error. */
    static Object parse(String text) {
        Json reader = new Json(text);
        reader.skipSpace();
        Object value = reader.value(0);
        reader.skipSpace();
        if (reader.pos != text.length())
            throw reader.fail("unexpected data after the JSON value");
        return value;
    }

    private BadRequest fail(String message) {
        return new BadRequest("invalid JSON at character " + (pos + 1) + ": " + message);
    }

    private void skipSpace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                pos++;
            else
                return;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH)
            throw fail("nested too deeply");
        if (pos >= text.length())
            throw fail("unexpected end of input");
        char c = text.charAt(pos);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9'))
                    return number();
                throw fail("unexpected character '" + c + "'");
        }
    }

    private Object literal(String word, Object result) {
        if (!text.startsWith(word, pos))
            throw fail("expected " + word);
        pos += word.length();
        return result;
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> out = new LinkedHashMap<>();
        pos++; // '{'
        skipSpace();
        if (pos < text.length() && text.charAt(pos) == '}') {
            pos++;
            return out;
        }
        while (true) {
            skipSpace();
            if (pos >= text.length() || text.charAt(pos) != '"')
                throw fail("expected a string key");
            String key = string();
            skipSpace();
            expect(':');
            skipSpace();
            Object v = value(depth + 1);
            if (out.containsKey(key))
                throw fail("duplicate key \"" + key + "\"");
            out.put(key, v);
            skipSpace();
            if (pos >= text.length())
                throw fail("unterminated object");
            char c = text.charAt(pos++);
            if (c == '}')
                return out;
            if (c != ',')
                throw fail("expected ',' or '}'");
        }
    }

    private List<Object> array(int depth) {
        List<Object> out = new ArrayList<>();
        pos++; // '['
        skipSpace();
        if (pos < text.length() && text.charAt(pos) == ']') {
            pos++;
            return out;
        }
        while (true) {
            skipSpace();
            out.add(value(depth + 1));
            skipSpace();
            if (pos >= text.length())
                throw fail("unterminated array");
            char c = text.charAt(pos++);
            if (c == ']')
                return out;
            if (c != ',')
                throw fail("expected ',' or ']'");
        }
    }

    private void expect(char c) {
        if (pos >= text.length() || text.charAt(pos) != c)
            throw fail("expected '" + c + "'");
        pos++;
    }

    private String string() {
        pos++; // opening quote
        int start = pos;
        // fast path: no escapes
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c == '"') {
                String s = text.substring(start, pos);
                pos++;
                return s;
            }
            if (c == '\\' || c < 0x20)
                break;
            pos++;
        }
        StringBuilder sb = new StringBuilder(text.substring(start, pos));
        while (true) {
            if (pos >= text.length())
                throw fail("unterminated string");
            char c = text.charAt(pos++);
            if (c == '"')
                return sb.toString();
            if (c < 0x20)
                throw fail("control character in a string");
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (pos >= text.length())
                throw fail("unterminated escape");
            char e = text.charAt(pos++);
            switch (e) {
                case '"': sb.append('"'); break;
                case '\\': sb.append('\\'); break;
                case '/': sb.append('/'); break;
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'n': sb.append('\n'); break;
                case 'r': sb.append('\r'); break;
                case 't': sb.append('\t'); break;
                case 'u':
                    if (pos + 4 > text.length())
                        throw fail("short \\u escape");
                    try {
                        sb.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw fail("bad \\u escape");
                    }
                    pos += 4;
                    break;
                default:
                    throw fail("bad escape \\" + e);
            }
        }
    }

    private Object number() {
        int start = pos;
        boolean integral = true;
        if (text.charAt(pos) == '-')
            pos++;
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c >= '0' && c <= '9') {
                pos++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                pos++;
            } else {
                break;
            }
        }
        String s = text.substring(start, pos);
        try {
            if (integral)
                return Long.parseLong(s);
            return Double.parseDouble(s);
        } catch (NumberFormatException ex) {
            pos = start;
            throw fail("bad number " + s);
        }
    }

    /**
     * Append {@code s} as a JSON string. Everything outside printable ASCII is written as a
     * {@code \\uXXXX} escape, so the output is ASCII whatever the platform charset, and a lone
     * surrogate survives the trip (Python's json module reads it back as the same code point).
     */
    static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c >= 0x20 && c < 0x7f) {
                out.append(c);
            } else {
                out.append(String.format("\\u%04x", (int) c));
            }
        }
        out.append('"');
    }
}
