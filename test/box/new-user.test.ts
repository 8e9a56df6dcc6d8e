/**
 * A new user's path, in one test, through the real CLI from an empty root:
 * init → a second worker → a bearer-API connection from a recipe with its
 * secret on stdin → verify ok (and failing with a wrong secret) → grant it to
 * scout → a real box run of scout calls the API, which sees the injected
 * token the box never saw → revoke → the next call is refused 403, naming the
 * connection and the command that would grant it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { type BearerApi, startBearerApi } from "../support/bearer-api.ts";
import { runRoster, runRosterWithInput } from "../support/cli.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { pointAtScriptedModel } from "../support/roster-root.ts";

const docker = await testDocker();
// the stand-in API answers on port 443, as an HTTPS API does: that needs root
const root = process.getuid?.() === 0;
if (docker && !root) console.warn("skipping the new user's path: its stand-in API binds port 443");

const TOKEN = "new-user-token-7a2b9c";
const ADDRESS = "127.0.0.29";

const bash = (command: string): ScriptStep => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});
const answerWithToolOutput: ScriptStep = (request) => {
  const tool = [...(request.body.messages ?? [])].reverse().find((m) => m.role === "tool");
  const content =
    typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
  return { text: `TOOL OUTPUT:\n${content}` };
};

/** What scout runs: a POST to the API (curl -v shows what the box itself sent), and its env. */
const CALL = [
  `curl -sS -v -X POST -H 'content-type: application/json' -d '{"note":"hi"}' https://api.test/v1/notes -w '\\nstatus=%{http_code}\\n' 2>&1`,
  "env",
].join("; ");

describe.skipIf(!docker || !root)("a new user's path from an empty root", () => {
  let dir: string;
  let model: ModelServer;
  let api: BearerApi;
  const env = () => ({ ROSTER_ROOT: dir });
  const roster = (args: string[]) => runRoster(args, env());

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roster-newuser-"));
    model = await new ModelServer().start("127.0.0.1");
    api = await startBearerApi({ name: "api.test", address: ADDRESS, token: TOKEN, dir });
  });
  afterAll(async () => {
    await model?.stop();
    await api?.upstream.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("init, a second worker, a connection verified, granted, used from a box, revoked", async () => {
    const init = await roster(["init"]);
    expect(init.code, init.stderr).toBe(0);
    const paths = rosterPaths({ ROSTER_ROOT: dir });
    // the scripted model stands in for a provider; the API is reached as api.test through its CA
    await pointAtScriptedModel(paths, model.baseUrl("127.0.0.1"), {
      gatewayExtra: api.gatewayToml,
    });
    const scout = await roster(["worker", "add", "scout"]);
    expect(scout.code, scout.stderr).toBe(0);

    const added = await runRosterWithInput(
      [
        "connection",
        "add",
        "api",
        "--from",
        "bearer",
        "--host",
        "api.test",
        "--worker",
        "elf",
        "--verify-path",
        "/v1/me",
        "--verify",
      ],
      `${TOKEN}\n`,
      env(),
    );
    expect(added.code, `${added.stdout}${added.stderr}`).toBe(0);
    expect(added.stdout).toContain(
      "verify api (as elf): ok: GET https://api.test/v1/me answered 200",
    );

    const wrong = await runRosterWithInput(
      ["connection", "secret", "api", "--verify"],
      "wrong\n",
      env(),
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain("failing: the API refused the credential");
    const right = await runRosterWithInput(
      ["connection", "secret", "api", "--verify"],
      `${TOKEN}\n`,
      env(),
    );
    expect(right.code, right.stderr).toBe(0);
    expect(right.stdout).toContain("ok: GET https://api.test/v1/me answered 200");

    const granted = await roster(["connection", "grant", "api", "scout"]);
    expect(granted.code, granted.stderr).toBe(0);
    const seenBefore = api.upstream.seen.length;
    model.play(bash(CALL), answerWithToolOutput);
    const used = await roster(["run", "scout", "post a note to the API"]);
    expect(used.code, used.stderr).toBe(0);
    expect(used.stdout).toContain("status=200");
    expect(used.stdout).toContain('"ok":true');
    const call = api.upstream.seen.at(-1);
    expect(api.upstream.seen.length).toBe(seenBefore + 1);
    expect(call).toMatchObject({ method: "POST", url: "/v1/notes", body: '{"note":"hi"}' });
    expect(call?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // what the box sent (curl -v) and its whole environment: never the token
    expect(used.stdout).not.toContain(TOKEN);
    expect(JSON.stringify(model.requests)).not.toContain(TOKEN);

    const revoked = await roster(["connection", "revoke", "api", "scout"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain("revoked api from scout");
    model.play(bash(CALL), answerWithToolOutput);
    const refused = await roster(["run", "scout", "post a note again"]);
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stdout).toContain("status=403");
    // the refusal's JSON body, as curl printed it
    expect(refused.stdout).toMatch(
      /connection:api\\?" covers it but is not granted to this worker/,
    );
    expect(refused.stdout).toContain("roster connection grant api scout");
    expect(api.upstream.seen.length).toBe(seenBefore + 1);
  });
});
