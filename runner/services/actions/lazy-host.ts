/**
 * The action host as a gateway is given it (boundary/gateway/exchange/action-host.ts):
 * loaded at its first request. Its executors bring chat and mail clients and a
 * secret scanner that a gateway serving only model calls never needs, and
 * every run that embeds a gateway would otherwise wait for them at its start.
 * Type imports only here: this file is loaded with every gateway.
 */
import type {
  ActionHandler,
  ActionHostFactory,
} from "../../boundary/gateway/exchange/action-host.ts";

export const lazyActionHost: ActionHostFactory = (paths, config) => {
  let host: Promise<ActionHandler> | undefined;
  const loaded = () =>
    (host ??= import("./host.ts").then(({ ActionHost }) => new ActionHost(paths, config)));
  return {
    handle: async (request) => (await loaded()).handle(request),
    holdMcpCall: async (call) => {
      const desk = await loaded();
      if (!desk.holdMcpCall) throw new Error("this action host has no approval desk for MCP calls");
      return desk.holdMcpCall(call);
    },
  };
};
