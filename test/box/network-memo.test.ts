import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ensureLockedNetwork } from "../../runner/box/network.ts";
import { recallLockedNetwork, rememberLockedNetwork } from "../../runner/box/network-memo.ts";
import { testDocker } from "../support/docker.ts";

/**
 * A run starts its gateway on the locked network's bridge address before it
 * has asked Docker, from the network as last verified. That memo must be
 * believed only while it is still true: a network removed and made again (a
 * new id), or an address the host no longer has, sends the run back to Docker.
 */
const docker = await testDocker();
const NAME = "roster-test-memo";
const state = await mkdtemp(join(tmpdir(), "roster-memo-"));

afterAll(async () => {
  await docker
    ?.getNetwork(NAME)
    .remove()
    .catch(() => undefined);
  await rm(state, { recursive: true, force: true });
});

describe.skipIf(!docker)("the remembered locked network", () => {
  it("is believed while its bridge is up, and not once the network is made again", async () => {
    if (!docker) return;
    expect(recallLockedNetwork(state, NAME)).toBeUndefined();
    const network = await ensureLockedNetwork(docker, NAME);
    rememberLockedNetwork(state, network);
    expect(recallLockedNetwork(state, NAME)).toEqual(network);
    // another network's name never matches
    expect(recallLockedNetwork(state, "roster-locked-other")).toBeUndefined();

    await docker.getNetwork(NAME).remove();
    expect(recallLockedNetwork(state, NAME)).toBeUndefined();
    const again = await ensureLockedNetwork(docker, NAME);
    expect(again.id).not.toBe(network.id);
    // the old memo still names the old id: not believed, even if the address came back the same
    expect(recallLockedNetwork(state, NAME)).toBeUndefined();
    rememberLockedNetwork(state, again);
    expect(recallLockedNetwork(state, NAME)).toEqual(again);
  });

  it("is not believed when it is damaged", async () => {
    if (!docker) return;
    const network = await ensureLockedNetwork(docker, NAME);
    rememberLockedNetwork(state, { ...network, id: "0123456789ab" });
    expect(recallLockedNetwork(state, NAME)).toBeUndefined();
    rememberLockedNetwork(state, { ...network, id: "../../etc" });
    expect(recallLockedNetwork(state, NAME)).toBeUndefined();
    await writeFile(join(state, "network.json"), "{ not json");
    expect(recallLockedNetwork(state, NAME)).toBeUndefined();
  });
});
