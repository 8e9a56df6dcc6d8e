import { describe, expect, it } from "vitest";
import { buildReader } from "../../runner/boundary/box/build-output.ts";
import { blamedPackage } from "../../runner/boundary/box/toolchain-image.ts";

/**
 * A classic build's output as the engine sends it: stderr coloured and one
 * line split over several messages. The lines the caller reads are whole
 * and plain, so a failing package is named. (Messages are handed to the
 * reader as the engine's stream parser would; no engine is asked anything.)
 */
const ESC = String.fromCharCode(27);

describe("following a build", () => {
  it("joins lines split over messages and drops the builder's colours", () => {
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
    const steps: string[] = [];
    const reader = buildReader(
      { step: (text) => steps.push(text), detail: () => undefined, note: () => undefined },
      "toolchain",
    );
    for (const message of messages) reader.onMessage(message);
    const build = reader.finish();
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
