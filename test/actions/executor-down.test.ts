import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveGate } from "../../runner/services/actions/desk.ts";
import { findGate, readGate } from "../../runner/services/actions/gates.ts";
import { startEmailDesk, submitAction } from "../support/action-host.ts";
import type { GatewayEnv } from "../support/gateway-env.ts";
import type { SmtpSink } from "../support/smtp.ts";

/**
 * A fault under the action host: the executor's server is down when a gate is
 * approved. The real gateway and a real SMTP server; no box (the faults that
 * need one are test/security/faults.test.ts's).
 */
describe("a gate approved while its executor is down", () => {
  let env: GatewayEnv;
  let smtp: SmtpSink;

  beforeAll(async () => {
    ({ env, smtp } = await startEmailDesk());
  });
  afterAll(async () => {
    await env?.cleanup();
    await smtp?.stop();
  });

  it("fails legibly, is retried by the next approval once the server is back, and sends once", async () => {
    // the mail server's address, with nothing listening there
    const live = smtp.vaultCredential("elf@roster.test");
    await env.writeVault("smtp", { ...live, port: "9" });
    const reply = await submitAction(env, await env.token("elf"), {
      intent: "email-send",
      payload: { to: ["lead@example.test"], subject: "numbers", body: "the numbers" },
      rationale: "asked for",
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    const gate = findGate(env.paths, String(reply.body.gate_id));

    const down = await approveGate(env.paths, gate, { by: "op" });
    expect(down.state).toBe("failed");
    expect(down.error).toMatch(/ECONNREFUSED|connect/i);
    expect(smtp.received).toHaveLength(0);

    await env.writeVault("smtp", live);
    const retried = await approveGate(env.paths, gate, { by: "op" });
    expect(retried.state).toBe("executed");
    const again = await approveGate(env.paths, gate, { by: "op" });
    expect(again.state).toBe("executed");
    expect(smtp.received).toHaveLength(1);
    expect(readGate(env.paths, "elf", gate.id)?.state).toBe("executed");
  });
});
