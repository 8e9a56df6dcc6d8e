import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot, serveNamesLocally } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

const docker = await testDocker();

/** Every tool result the run's model saw, in order. */
const toolOutputs = (request: RecordedRequest): string[] =>
  (request.body.messages ?? [])
    .filter((message) => message.role === "tool")
    .map((message) =>
      typeof message.content === "string" ? message.content : JSON.stringify(message.content),
    );

describe.skipIf(!docker)(
  "request_access from a real box: approved at the CLI it lets the next request through, denied it doesn't",
  () => {
    let model: ModelServer;
    let site: Upstream;
    let deployment: RosterRoot;
    let seen: string[] = [];
    const post = (host: string) =>
      `curl -s -o /dev/null -w '${host}=%{http_code}\\n' -X POST https://${host}:${site.port}/v1/items`;
    const ask = (host: string): ScriptStep => ({
      toolCalls: [
        {
          name: "request_access",
          arguments: {
            host,
            methods: ["POST"],
            path_prefix: "/v1/",
            why: `to file items on ${host}`,
          },
        },
      ],
    });
    const keep: ScriptStep = (request) => {
      seen = toolOutputs(request);
      return { text: "done" };
    };

    beforeAll(async () => {
      model = await new ModelServer().start("127.0.0.1");
      site = await Upstream.start({ tls: true, names: ["api.test", "other.test"] });
      // a fresh deployment as `roster init` writes it: request-access is granted there
      deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
      await serveNamesLocally(deployment, site.certificate?.caPem ?? "", [
        "api.test",
        "other.test",
      ]);
    });
    afterAll(async () => {
      await model?.stop();
      await site?.stop();
      await deployment?.cleanup();
    });

    it("files two requests, the operator approves one and denies the other, and the next run's requests say so", async () => {
      const both = `${post("api.test")}; ${post("other.test")}`;
      model.play(
        { toolCalls: [{ name: "bash", arguments: { command: both } }] },
        ask("api.test"),
        ask("other.test"),
        keep,
      );
      const first = await deployment.roster(["run", "elf", "file the items"]);
      expect(first.code, first.stderr).toBe(0);
      expect(seen[0]).toContain("api.test=403\nother.test=403");
      const gates = seen
        .slice(1)
        .map((text) => /pending: gate (g-[0-9a-f]{8})/.exec(text)?.[1] ?? "");
      expect(gates, seen.join("\n")).toEqual([
        expect.stringMatching(/^g-/),
        expect.stringMatching(/^g-/),
      ]);

      const approved = await deployment.roster(["approvals", "approve", gates[0] ?? ""]);
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toMatch(new RegExp(`^${gates[0]} executed: .*"status":"ok"`));
      const denied = await deployment.roster([
        "approvals",
        "deny",
        gates[1] ?? "",
        "not",
        "that",
        "one",
      ]);
      expect(denied.code, denied.stderr).toBe(0);

      model.play({ toolCalls: [{ name: "bash", arguments: { command: both } }] }, keep);
      const second = await deployment.roster(["run", "elf", "file the items again"]);
      expect(second.code, second.stderr).toBe(0);
      expect(seen[0]).toContain("api.test=200\nother.test=403");
    });
  },
);
