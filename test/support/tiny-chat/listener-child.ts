/**
 * TEST STAND-IN: what `roster server listener <worker> <platform>` is in a
 * roster whose list of platforms has tiny chat's line: the list with tiny
 * chat added (addChatPlatform, as the list's one more line), then the
 * command's own body. A test's ListenerSupervisor starts this instead of the
 * roster command (its `launch`), since that command's list names no tiny chat.
 */
import { listenerCommand } from "../../../runner/cli/does/server.ts";
import { addChatPlatform } from "../../../runner/services/chat/platforms.ts";
import { tinyChat } from "./platform.ts";

addChatPlatform(tinyChat);
const [worker = "", platform = ""] = process.argv.slice(2);
await listenerCommand(worker, platform);
