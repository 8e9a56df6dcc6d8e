import { describe, expect, it } from "vitest";
import {
  renderInjection,
  renderTemplate,
} from "../../runner/boundary/gateway/credentials/vault.ts";
import { globMatches, judge } from "../../runner/boundary/gateway/judging/judge.ts";
import { normalisePath } from "../../runner/boundary/gateway/judging/request-facts.ts";
import { addressProblem } from "../../runner/boundary/gateway/upstream/ssrf.ts";
import type { ScopedGrant } from "../../runner/ground/config/grant-schema.ts";
import { hostMatches, hostPatternProblem } from "../../runner/ground/config/host-pattern.ts";
import { facts } from "../support/facts.ts";

const grant = (g: Partial<ScopedGrant> & { name: string }): ScopedGrant => ({
  verdict: "allow",
  scope: "org",
  source: "org.toml",
  ...g,
});

describe("host patterns", () => {
  it.each([
    ["*", "anything.example", true],
    ["*.example.com", "example.com", true],
    ["*.example.com", "a.b.example.com", true],
    ["*.example.com", "badexample.com", false],
    ["api.example.com", "API.Example.com.", true],
    ["api.example.com", "api.example.com.evil.test", false],
    ["::1", "[::1]", true],
  ])("%s matches %s: %s", (pattern, host, expected) => {
    expect(hostMatches(pattern, host)).toBe(expected);
  });

  it.each([["a*.example.com"], ["https://x.test"], ["x.test:443"], ["bad_-.-host"], [""]])(
    "%j is not a valid pattern",
    (pattern) => {
      expect(hostPatternProblem(pattern)).toBeDefined();
    },
  );
});

describe("paths are normalised before prefix checks", () => {
  it.each([
    ["/a/b/../c", "/a/c"],
    ["/a/%2e%2e/b", "/b"],
    ["/a/./b/", "/a/b/"],
    ["/../../etc/passwd", "/etc/passwd"],
    ["/a\\..\\b", "/b"],
    ["/%zz", "/%zz"],
  ])("%s → %s", (raw, normal) => {
    expect(normalisePath(raw)).toBe(normal);
  });
});

describe("the judge", () => {
  const grants = [
    grant({
      name: "no-admin",
      verdict: "deny",
      match: { host: "api.example.com", pathPrefix: "/admin" },
    }),
    grant({ name: "read", match: { host: "api.example.com", method: ["GET", "HEAD"] } }),
    grant({ name: "elf-writes", scope: "org/elf", match: { host: "*.elf.test", method: "*" } }),
    grant({ name: "raw", verdict: "tunnel", match: { host: "db.test", port: 5432 } }),
    grant({
      name: "small-json",
      match: { host: "json.test", headerContains: { "content-type": "json" }, maxBodySize: 10 },
    }),
    grant({
      name: "mcp-search",
      match: { host: "mcp.test", mcp: { method: "tools/call", tool: "search_*" } },
    }),
  ];

  it("takes the first match; nothing matching is a deny", () => {
    expect(judge(grants, facts({ path: "/admin/users" }), "request").rule?.name).toBe("no-admin");
    expect(judge(grants, facts({ path: "/adminx" }), "request")).toMatchObject({
      verdict: "allow",
    });
    expect(judge(grants, facts({ host: "nowhere.test" }), "request")).toMatchObject({
      verdict: "deny",
      rule: undefined,
    });
  });

  it("scopes worker grants to that worker", () => {
    expect(judge(grants, facts({ host: "x.elf.test", method: "POST" }), "request").verdict).toBe(
      "allow",
    );
    expect(
      judge(grants, facts({ subject: "org/imp", host: "x.elf.test" }), "request").verdict,
    ).toBe("deny");
    expect(judge(grants, facts({ subject: undefined }), "request").verdict).toBe("deny");
  });

  it("hints when only the method stands in the way", () => {
    const decision = judge(grants, facts({ method: "DELETE" }), "request");
    expect(decision.hint).toContain(
      'DELETE api.example.com is blocked by method, not host: "read" allows GET, HEAD',
    );
  });

  it("names the connection a worker lacks, and the command that grants it", () => {
    const withConnection = [
      grant({
        name: "connection:api",
        scope: "org/elf",
        source: "connections/api.toml",
        match: { host: "api.test", port: 443, method: ["*"] },
      }),
      ...grants,
    ];
    const scout = facts({ subject: "org/scout", host: "api.test", method: "POST" });
    const refused = judge(withConnection, scout, "request");
    expect(refused).toMatchObject({ verdict: "deny", rule: undefined });
    expect(refused.hint).toContain('"connection:api" covers it but is not granted to this worker');
    expect(refused.hint).toContain("roster connection grant api scout");
    // elf holds it: allowed, and the hint never shows for an unrelated host
    expect(judge(withConnection, { ...scout, subject: "org/elf" }, "request").verdict).toBe(
      "allow",
    );
    expect(judge(withConnection, { ...scout, host: "other.test" }, "request").hint).not.toContain(
      "connection:api",
    );
  });

  it("tunnels at CONNECT time and refuses intercepted requests a tunnel grant matches", () => {
    expect(
      judge(grants, facts({ host: "db.test", port: 5432, method: "CONNECT" }), "connect").verdict,
    ).toBe("tunnel");
    expect(judge(grants, facts({ host: "db.test", port: 5432 }), "request").verdict).toBe("deny");
  });

  it("checks headers, body size and MCP tools", () => {
    const json = { host: "json.test", headers: { "content-type": "application/json" } };
    expect(judge(grants, facts({ ...json, bodySize: 10 }), "request").verdict).toBe("allow");
    expect(judge(grants, facts({ ...json, bodySize: 11 }), "request").verdict).toBe("deny");
    expect(judge(grants, facts({ host: "json.test" }), "request").verdict).toBe("deny");
    const call = (tool: string) => facts({ host: "mcp.test", mcp: { method: "tools/call", tool } });
    expect(judge(grants, call("search_web"), "request").verdict).toBe("allow");
    expect(judge(grants, call("delete_all"), "request").verdict).toBe("deny");
  });

  it("matches MCP methods and tools as a glob or a list of globs, and a gate verdict on a tool", () => {
    const mcpGrants = [
      grant({
        name: "hold",
        verdict: "gate",
        match: { host: "mcp.test", mcp: { tool: ["*_create", "merge_pr"] } },
      }),
      grant({
        name: "protocol",
        match: { host: "mcp.test", mcp: { method: ["initialize", "notifications/*"] } },
      }),
      grant({ name: "read", match: { host: "mcp.test", mcp: { tool: "issues_*" } } }),
    ];
    const at = (mcp: { method: string; tool?: string }) =>
      judge(mcpGrants, facts({ host: "mcp.test", mcp }), "request");
    const call = (tool: string) => at({ method: "tools/call", tool });
    expect(call("issues_create")).toMatchObject({ verdict: "gate", rule: { name: "hold" } });
    expect(call("merge_pr").verdict).toBe("gate");
    expect(call("merge_pr_now").verdict).toBe("deny");
    expect(call("issues_list")).toMatchObject({ verdict: "allow", rule: { name: "read" } });
    expect(at({ method: "notifications/initialized" }).verdict).toBe("allow");
    expect(at({ method: "initialize" }).verdict).toBe("allow");
    expect(at({ method: "tools/list" }).verdict).toBe("deny");
    // a tool pattern never matches a message without a tool
    expect(at({ method: "tools/call" }).verdict).toBe("deny");
  });

  it("matches tool globs anchored at both ends", () => {
    expect(globMatches("search_*", "search_")).toBe(true);
    expect(globMatches("search_*", "re_search_x")).toBe(false);
  });
});

describe("addresses a box may not reach without an exact grant", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.20.0.1", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local or cloud metadata"],
    ["100.64.0.1", "CGNAT"],
    ["224.0.0.1", "multicast"],
    ["::1", "loopback"],
    ["fd12::1", "private (ULA)"],
    ["::ffff:127.0.0.1", "loopback"],
  ])("%s is %s", (address, label) => {
    expect(addressProblem(address)).toBe(label);
  });

  it("lets public addresses through", () => {
    expect(addressProblem("93.184.216.34")).toBeUndefined();
    expect(addressProblem("2606:4700::1")).toBeUndefined();
  });
});

describe("credential templates", () => {
  const credential = { token: "t0k", user: "u" };
  it("renders fields and nested base64", () => {
    expect(renderTemplate("Bearer {token}", credential)).toBe("Bearer t0k");
    expect(renderTemplate("Basic {b64:{user}:{token}}", credential)).toBe(
      `Basic ${Buffer.from("u:t0k").toString("base64")}`,
    );
    expect(renderTemplate("{missing}", credential)).toBeUndefined();
  });

  it("skips entries for other hosts and lets the last entry per header win", () => {
    const headers = renderInjection(
      [
        { header: "Authorization", value: "first {token}" },
        { header: "authorization", value: "second {token}", hosts: ["other.test"] },
        { header: "x-user", value: "{user}" },
        { header: "x-gone", value: "{nope}" },
      ],
      credential,
      "api.test",
    );
    expect([...headers.entries()]).toEqual([
      ["authorization", "first t0k"],
      ["x-user", "u"],
    ]);
  });
});
