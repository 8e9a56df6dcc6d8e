/**
 * Every test file starts as the roster command does: with the chat
 * platforms' list read, so their terms (config keys, id rules, send tools,
 * bot recipes) are known below services/ (runner/ground/chat/terms.ts).
 */
import "../../runner/services/chat/platforms.ts";
