import { Readable } from "node:stream";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { followBuild } from "../../runner/box/build-output.ts";
import { blamedPackage } from "../../runner/box/toolchain-image.ts";

/**
 * A classic build's output as the engine sends it: stderr coloured and one
 * line split over several messages. The lines the caller reads are whole
 * and plain, so a failing package is named. (The modem only parses the
 * stream here; no engine is asked anything.)
 */
const ESC = String.fromCharCode(27);

describe("following a build", () => {
  it("joins lines split over messages and drops the builder's colours", async () => {
    const messages = [
      { stream: "Step 5/9 : RUN apt-get install x\n" },
      { stream: " ---> Running in 7b2c\n" },
      { stream: "Reading state information...\n" },
      { stream: `${ESC}[91mE${ESC}[0m` },
      { stream: `${ESC}[91m: ${ESC}[0m` },
      { stream: `${ESC}[91mUnable to locate package roster-no-such-package${ESC}[0m` },
      { stream: `${ESC}[91m\n${ESC}[0m` },
      {
        error: "returned a non-zero code: 100",
        errorDetail: { message: "returned a non-zero code: 100" },
      },
    ];
    const stream = Readable.from(messages.map((message) => `${JSON.stringify(message)}\r\n`));
    const steps: string[] = [];
    const build = await followBuild(
      new Docker({ socketPath: "/nonexistent" }),
      stream,
      { step: (text) => steps.push(text), detail: () => undefined, note: () => undefined },
      "toolchain",
    );
    expect(build.failure).toBe("returned a non-zero code: 100");
    expect(build.output).toContain("E: Unable to locate package roster-no-such-package");
    expect(build.output.join("\n")).not.toContain(ESC);
    expect(steps).toEqual(["toolchain: Step 5/9 : RUN apt-get install x"]);
    const toolchain = { apt: ["roster-no-such-package", "sl"], npm: [], pip: [], pip_wheels: [] };
    expect(blamedPackage(toolchain, build.output.join("\n"))).toBe(
      'apt package "roster-no-such-package"',
    );
  });
});
