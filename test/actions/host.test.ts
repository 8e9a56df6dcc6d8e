import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { approveGate, denyGate } from "../../runner/services/actions/desk.ts";
import {
  findGate,
  listGates,
  readGate,
  resultMarker,
  writeGate,
} from "../../runner/services/actions/gates.ts";
import { submitAction } from "../support/action-host.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { SmtpSink } from "../support/smtp.ts";

/**
 * The action host behind the real gateway: proposals from a run's token,
 * trust, durable gates, the desk, and a real SMTP server on the far side.
 */
let env: GatewayEnv;
let smtp: SmtpSink;

const ORG = `
[[action]]
name = "message-user"
executor = "message-user"
trust = "auto"

[[action]]
name = "email-send"
executor = "email"

[[action]]
name = "email-earned"
executor = "email"
trust = "earned"
after = 2

[[trust]]
intent = "email-send"
match = { to = "*@team.test" }
level = "auto"

[[action]]
name = "only-zed"
executor = "message-user"
trust = "auto"
workers = ["zed"]
`;

const submit = (token: string, envelope: unknown) => submitAction(env, token, envelope);

const email = (to: string[], subject = "Weekly numbers") => ({
  intent: "email-send",
  payload: { to, subject, body: `Hello,\nthe numbers are in.\n— elf` },
  rationale: "the lead asked for the weekly numbers",
});

beforeAll(async () => {
  smtp = await SmtpSink.start({ user: "roster", pass: "smtp-secret" });
  env = await startGatewayEnv(ORG);
  for (const worker of ["elf", "zed"]) {
    await mkdir(join(env.paths.config, "workers", worker), { recursive: true });
    await writeFile(
      join(env.paths.config, "workers", worker, "worker.toml"),
      `name = "${worker}"\n`,
    );
  }
  await env.writeVault("smtp", smtp.vaultCredential("elf@roster.test"));
  await new Promise((resolve) => setTimeout(resolve, 600)); // the gateway sees the new workers
});
afterAll(async () => {
  await env?.cleanup();
  await smtp?.stop();
});
beforeEach(() => {
  smtp.received.length = 0;
});

describe("proposals", () => {
  it("runs an auto action at once: message_user lands in the inbox", async () => {
    const token = await env.token("elf", "run-auto");
    const reply = await submit(token, {
      intent: "message-user",
      payload: { text: "build is green" },
    });
    expect(reply).toEqual({
      status: 200,
      body: { status: "done", result: { delivered: "inbox" } },
    });
    const inbox = readFileSync(join(env.paths.audit, "messages.jsonl"), "utf8");
    expect(inbox).toContain('"text":"build is green"');
    const kinds = readJournal(env.paths, "elf").map((event) => event.kind);
    expect(kinds.slice(-2)).toEqual(["action-proposed", "executed"]);
  });

  it("keeps the journal whole under 40 concurrent proposals", async () => {
    const token = await env.token("elf", "run-burst");
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        submit(token, {
          intent: "message-user",
          payload: { text: `burst ${index} ${"x".repeat(2000)}` },
        }),
      ),
    );
    expect(replies.every((reply) => reply.status === 200)).toBe(true);
    const lines = readFileSync(join(env.paths.data, "workers/elf/journal/events.jsonl"), "utf8")
      .trim()
      .split("\n");
    const parsed = lines.map((line) => JSON.parse(line) as { run_id: string; kind: string });
    const burst = parsed.filter((event) => event.run_id === "run-burst");
    expect(burst.filter((event) => event.kind === "action-proposed")).toHaveLength(40);
    expect(burst.filter((event) => event.kind === "executed")).toHaveLength(40);
  });

  it("gates an email, and the approved one reaches a real SMTP server exactly as the desk shows it", async () => {
    const token = await env.token("elf", "run-gated");
    const reply = await submit(token, email(["boss@example.test"]));
    expect(reply.status).toBe(202);
    expect(reply.body.status).toBe("pending");
    const gateId = String(reply.body.gate_id);
    expect(gateId).toMatch(/^g-[0-9a-f]{8}$/);
    expect(smtp.received).toHaveLength(0);

    const gate = findGate(env.paths, gateId.slice(2, 6));
    expect(gate).toMatchObject({ state: "pending", worker: "org/elf", run_id: "run-gated" });
    const done = await approveGate(env.paths, gate, { by: "test", note: "fine" });
    expect(done.state).toBe("executed");
    expect(smtp.received).toHaveLength(1);
    const mail = smtp.received[0];
    expect(mail?.to).toEqual(["boss@example.test"]);
    expect(mail?.from).toBe("elf@roster.test");
    expect(mail?.raw).toContain("Subject: Weekly numbers");
    expect(mail?.raw).toContain("the numbers are in.");
    expect(mail?.raw).toContain(`Message-ID: <${gateId}@roster.invalid>`);

    const journal = readJournal(env.paths, "elf").filter((event) => event.gate_id === gateId);
    expect(journal.map((event) => event.kind)).toEqual(["gate-filed", "approved", "executed"]);
    const audit = readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.gate_id === gateId);
    expect(audit.map((line) => line.disposition)).toEqual(["gated", "executed"]);
  });

  it("a trust rule whose globs hold runs without a gate; one address outside it gates the lot", async () => {
    const token = await env.token("elf");
    const inside = await submit(token, email(["ann@team.test", "Bob <bob@team.test>"]));
    expect(inside.status).toBe(200);
    expect(smtp.received).toHaveLength(1);
    const mixed = await submit(token, email(["ann@team.test", "eve@elsewhere.test"]));
    expect(mixed.status).toBe(202);
    expect(smtp.received).toHaveLength(1);
  });

  it("refuses an intent with no grant in scope, and files nothing", async () => {
    const token = await env.token("elf");
    const before = listGates(env.paths, "elf").length;
    const unknown = await submit(token, { intent: "launch-rockets", payload: {} });
    expect(unknown).toEqual({
      status: 403,
      body: { status: "denied", reason: 'no action grant for "launch-rockets"' },
    });
    const notMine = await submit(token, { intent: "only-zed", payload: { text: "hi" } });
    expect(notMine.status).toBe(403);
    expect(listGates(env.paths, "elf")).toHaveLength(before);
    const zed = await submit(await env.token("zed"), {
      intent: "only-zed",
      payload: { text: "hi" },
    });
    expect(zed.status).toBe(200);
  });

  it.each([
    ["not JSON", "{nope", /not JSON/],
    ["no intent", { payload: {} }, /intent/],
    [
      "an unknown envelope field",
      { intent: "message-user", payload: { text: "x" }, worker: "zed" },
      /worker/,
    ],
    [
      "a wrong payload type",
      { intent: "email-send", payload: { to: "boss@example.test", subject: "s", body: "b" } },
      /payload\.to/,
    ],
    [
      "a bad address",
      { intent: "email-send", payload: { to: ["not an address"], subject: "s", body: "b" } },
      /payload\.to\.0/,
    ],
    [
      "an oversized envelope",
      { intent: "message-user", payload: { text: "x".repeat(300_000) } },
      /over \d+ bytes/,
    ],
  ])(
    "answers 400 naming the field for %s, and executes nothing",
    async (_name, envelope, field) => {
      const token = await env.token("elf");
      const reply = await submit(token, envelope);
      expect(reply.status).toBe(400);
      expect(String(reply.body.error)).toMatch(/^bad envelope: /);
      expect(String(reply.body.error)).toMatch(field);
      expect(smtp.received).toHaveLength(0);
    },
  );

  it("attributes a forged envelope to the token's worker and run", async () => {
    const token = await env.token("elf", "run-true");
    const reply = await submit(token, { ...email(["x@example.test"]), run_id: "run-forged" });
    const gate = findGate(env.paths, String(reply.body.gate_id));
    expect(gate.worker).toBe("org/elf");
    expect(gate.run_id).toBe("run-true");
    expect(listGates(env.paths, "zed").some((one) => one.id === gate.id)).toBe(false);
  });

  it("answers the box's own gates and journal, never another worker's", async () => {
    const token = await env.token("zed");
    const gates = await viaProxy(proxyUrlFor(env, token), "https://actions.roster.internal/gates", {
      ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
    });
    expect(gates.status).toBe(200);
    expect(JSON.parse(gates.body)).toEqual({ gates: [] });
  });
});

describe("the desk", () => {
  it("a double approve executes once, and a denied gate can't be approved", async () => {
    const token = await env.token("elf");
    const reply = await submit(token, email(["once@example.test"]));
    const gate = findGate(env.paths, String(reply.body.gate_id));
    const [first, second] = await Promise.allSettled([
      approveGate(env.paths, gate, { by: "a" }),
      approveGate(env.paths, gate, { by: "b" }),
    ]);
    const third = await approveGate(env.paths, gate, { by: "c" });
    expect([first.status, second.status]).toContain("fulfilled");
    expect(third.state).toBe("executed");
    expect(smtp.received).toHaveLength(1);

    const other = await submit(token, email(["never@example.test"]));
    const held = findGate(env.paths, String(other.body.gate_id));
    const denied = await denyGate(env.paths, held, { by: "test", note: "not this week" });
    expect(denied.state).toBe("denied");
    await expect(approveGate(env.paths, held, { by: "test" })).rejects.toThrow(/denied/);
    expect(smtp.received).toHaveLength(1);
    const last = readJournal(env.paths, "elf").at(-1);
    expect(last).toMatchObject({
      kind: "denied",
      gate_id: held.id,
      detail: { note: "not this week" },
    });
  });

  it("a crash mid-execute resumes without sending twice", async () => {
    const token = await env.token("elf");
    const reply = await submit(token, email(["crash@example.test"]));
    const gate = findGate(env.paths, String(reply.body.gate_id));
    // what a desk that died after the send leaves: the gate executing, its lock held by a dead
    // process, and the executor's result on disk
    const worker = "elf";
    writeGate(env.paths, { ...gate, state: "executing" });
    await writeFile(
      `${join(env.paths.data, "workers", worker, "gates", gate.id)}.json.lock`,
      "999999",
    );
    await writeFile(
      resultMarker(env.paths, { worker, id: gate.id }),
      JSON.stringify({ delivered: "smtp" }),
    );
    const resumed = await approveGate(env.paths, gate, { by: "test" });
    expect(resumed).toMatchObject({ state: "executed", result: { delivered: "smtp" } });
    expect(smtp.received).toHaveLength(0);
    expect(
      existsSync(`${join(env.paths.data, "workers", worker, "gates", gate.id)}.json.lock`),
    ).toBe(false);
  });

  it("gates survive a gateway restart and are approved after it", async () => {
    const token = await env.token("elf");
    const reply = await submit(token, email(["later@example.test"]));
    await env.restart();
    const gate = readGate(env.paths, "elf", String(reply.body.gate_id));
    expect(gate?.state).toBe("pending");
    if (!gate) return;
    expect((await approveGate(env.paths, gate, { by: "test" })).state).toBe("executed");
    expect(smtp.received).toHaveLength(1);
  });

  it("the CLI desk lists, shows exactly what would be sent, approves and denies by id prefix", async () => {
    const token = await env.token("elf");
    const reply = await submit(token, email(["cli@example.test"], "From the desk"));
    const id = String(reply.body.gate_id);
    const cli = (args: string[]) => runRoster(args, { ROSTER_ROOT: env.root });
    const listed = await cli(["approvals", "ls"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`${id}\\s+pending\\s+elf .*email to cli@example.test: From the desk`),
    );
    const shown = await cli(["approvals", "show", id.slice(0, 6)]);
    expect(shown.stdout).toContain("why       the lead asked for the weekly numbers");
    expect(shown.stdout).toContain(
      "--- what would be sent ---\nTo: cli@example.test\nSubject: From the desk\n\nHello,\nthe numbers are in.\n— elf\n--- end ---",
    );
    const approved = await cli(["approvals", "approve", id, "looks", "right"]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^${id} executed: .*"delivered":"smtp"`));
    expect(smtp.received.at(-1)?.raw).toContain("Subject: From the desk");
    const again = await cli(["approvals", "deny", id]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      `roster: gate ${id} is executed; only a pending or failed gate can be denied`,
    );
    const missing = await cli(["approvals", "show", "ffffffff"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no gate "ffffffff"');
    const inbox = await cli(["inbox", "--limit", "100"]);
    expect(inbox.stdout).toMatch(/elf: build is green/);
  });

  it("earned trust runs unasked after N executed gates, and one denial revokes it", async () => {
    const token = await env.token("elf");
    const earned = (to: string) => ({ ...email([to]), intent: "email-earned" });
    for (const to of ["a@example.test", "b@example.test"]) {
      const reply = await submit(token, earned(to));
      expect(reply.status).toBe(202);
      await approveGate(env.paths, findGate(env.paths, String(reply.body.gate_id)), { by: "test" });
    }
    const third = await submit(token, earned("c@example.test"));
    expect(third.status).toBe(200);
    expect(smtp.received).toHaveLength(3);

    // auto runs file no gate, so the denial is of a gate filed the way a human would see it
    const hist = listGates(env.paths, "elf").filter((gate) => gate.intent === "email-earned");
    const first = hist[0];
    if (!first) throw new Error("no earned gates");
    writeGate(env.paths, {
      ...first,
      id: "g-00000000",
      state: "pending",
      filed_at: new Date().toISOString(),
    });
    await denyGate(env.paths, findGate(env.paths, "g-00000000"), { by: "test" });
    const after = await submit(token, earned("e@example.test"));
    expect(after.status).toBe(202);
    expect(String(after.body.message)).toMatch(/revoked/);

    const cli = (args: string[]) => runRoster(args, { ROSTER_ROOT: env.root });
    const trust = await cli(["trust", "elf"]);
    expect(trust.code, trust.stderr).toBe(0);
    expect(trust.stdout).toContain("elf may propose (anything else is refused):");
    expect(trust.stdout).toMatch(/email-send → email\n\s+auto\s+when to matches \*@team\.test/);
    expect(trust.stdout).toMatch(/email-earned → email\n\s+earned\s+otherwise/);
    expect(trust.stdout).toMatch(
      /earned so far: \d+ of 2 executed, 1 denied → still gates \(a denial revoked it\)/,
    );
    expect(trust.stdout).not.toContain("only-zed");
    expect((await cli(["trust", "zed"])).stdout).toContain("only-zed → message-user");
    expect((await cli(["trust", "nobody"])).code).toBe(2);
  });
});
