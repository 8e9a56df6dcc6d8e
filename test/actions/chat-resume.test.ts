import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveGate } from "../../runner/services/actions/desk.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { slackParts } from "../../runner/services/chat/slack/sender.ts";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { SlackStandIn } from "../support/slack-stand-in.ts";

/**
 * A long chat message goes in parts, and chat.postMessage has no idempotency
 * key: a send that failed part-way and is approved again must post only what
 * did not go out, never a delivered part twice. Behind the real gateway and
 * action host, with the Slack stand-in on the far side.
 */
let env: GatewayEnv;
let slack: SlackStandIn;

const SLACK_TOKEN = "xoxb-roster-resume-token";
const CHANNEL = "C0RESUME01";

const ORG = `
[[action]]
name = "slack-send"
executor = "slack"
trust = "gate"
`;

/** Numbered lines, `count` characters in all: a long text with line breaks to split on. */
function longText(count: number): string {
  const lines: string[] = [];
  for (let n = 1, length = 0; length < count; n += 1) {
    const line = `line ${String(n).padStart(4, "0")}: ${"the quick brown fox ".repeat(3)}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join("\n").slice(0, count);
}

beforeAll(async () => {
  slack = await SlackStandIn.start({ botToken: SLACK_TOKEN, channels: [CHANNEL] });
  env = await startGatewayEnv(ORG);
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  await env.writeVault("slack", { bot_token: SLACK_TOKEN, api_base: slack.apiBase });
  await new Promise((resolve) => setTimeout(resolve, 600)); // the gateway sees the new worker
});
afterAll(async () => {
  await env?.cleanup();
  await slack?.stop();
});

describe("a retried Slack send", () => {
  it("that failed after part 2 of 3 posts only part 3 when approved again: 3 messages in all", async () => {
    const text = longText(10_000);
    const parts = slackParts(text);
    expect(parts).toHaveLength(3);
    const reply = await submitAction(env, await env.token("elf", "run-resume"), {
      intent: "slack-send",
      payload: { channel_id: CHANNEL, text },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    const gate = findGate(env.paths, String(reply.body.gate_id));

    slack.failPostAfter(2);
    const failed = await approveGate(env.paths, gate, { by: "op" });
    expect(failed.state).toBe("failed");
    expect(failed.error).toBe(
      `Slack chat.postMessage for ${CHANNEL} refused: fatal_error after 2 of 3 messages were posted`,
    );
    expect(slack.history(CHANNEL).map((message) => message.text)).toEqual(parts.slice(0, 2));

    const retried = await approveGate(env.paths, findGate(env.paths, gate.id), { by: "op" });
    expect(retried.state, retried.error).toBe("executed");
    const posted = slack.history(CHANNEL);
    expect(posted.map((message) => message.text)).toEqual(parts);
    expect(slack.requests.filter((r) => r.path === "/api/chat.postMessage")).toHaveLength(4);
    // the result names the first message, posted by the first attempt
    expect(retried.result).toEqual({
      sent: true,
      channel_id: CHANNEL,
      message_ts: posted[0]?.ts,
      parts: 3,
    });
  });
});
