/**
 * The real discord.js clients pointed at a Discord stand-in, as roster's
 * listener builds them, for tests that hold the double to the protocol those
 * clients speak: a REST client, and gateway managers that record every
 * dispatch they receive and are destroyed together at the end of a test.
 */
import { REST, RequestMethod } from "@discordjs/rest";
import {
  type CreateWebSocketManagerOptions,
  Encoding,
  type SessionInfo,
  WebSocketManager,
  WebSocketShardEvents,
} from "@discordjs/ws";
import {
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayMessageCreateDispatch,
  Routes,
} from "discord-api-types/v10";
import type { DiscordStandIn } from "./discord-stand-in.ts";

export interface GatewayClientOptions {
  token?: string;
  rest?: REST;
  intents?: number;
  session?: SessionInfo;
}

export class DiscordClients {
  private readonly managers: WebSocketManager[] = [];

  constructor(
    private readonly standIn: DiscordStandIn,
    private readonly token: string,
    private readonly intents: number,
  ) {}

  rest(token = this.token): REST {
    return new REST({ api: this.standIn.apiBase, version: "10" }).setToken(token);
  }

  /** POST /interactions/:id/:token/callback as a bot sends it: no bot token, the path's token is the credential. */
  callback(id: string, token: string, body: Record<string, unknown>) {
    return new REST({ api: this.standIn.apiBase, version: "10" }).queueRequest({
      method: RequestMethod.Post,
      fullRoute: Routes.interactionCallback(id, token),
      body,
      auth: false,
    });
  }

  /** A gateway client recording what it receives; `connect()` on its manager starts it. */
  gateway(options: GatewayClientOptions = {}) {
    const { standIn } = this;
    // The default session store is one map shared by every manager in the process; each client
    // here keeps its own so one test's session can't leak into another's.
    const sessions = new Map<number, SessionInfo>();
    if (options.session) sessions.set(0, options.session);
    const settings: CreateWebSocketManagerOptions = {
      token: options.token ?? this.token,
      intents: options.intents ?? this.intents,
      rest: options.rest ?? this.rest(),
      encoding: Encoding.JSON,
      compression: null,
      retrieveSessionInfo: (shardId) => sessions.get(shardId) ?? null,
      updateSessionInfo: (shardId, info) => {
        if (info) sessions.set(shardId, info);
        else sessions.delete(shardId);
      },
    };
    const manager = new WebSocketManager(settings);
    this.managers.push(manager);
    const dispatches: GatewayDispatchPayload[] = [];
    const errors: Error[] = [];
    manager.on(WebSocketShardEvents.Dispatch, ({ data }) => {
      dispatches.push(data);
    });
    // Without an error listener the emitter throws the shard's errors (a refused reconnect, say).
    manager.on(WebSocketShardEvents.Error, ({ error }) => {
      errors.push(error);
    });
    const messageCreate = (id: string) =>
      standIn.waitFor(() =>
        dispatches.find(
          (dispatch): dispatch is GatewayMessageCreateDispatch =>
            dispatch.t === GatewayDispatchEvents.MessageCreate && dispatch.d.id === id,
        ),
      );
    /** The first dispatch of type `t` that `match` accepts, once it has arrived. */
    const received = <T extends GatewayDispatchEvents>(
      t: T,
      match: (dispatch: Extract<GatewayDispatchPayload, { t: T }>) => boolean = () => true,
    ) =>
      standIn.waitFor(() =>
        dispatches.find(
          (dispatch): dispatch is Extract<GatewayDispatchPayload, { t: T }> =>
            dispatch.t === t && match(dispatch as Extract<GatewayDispatchPayload, { t: T }>),
        ),
      );
    return { manager, dispatches, errors, messageCreate, received };
  }

  async destroy(): Promise<void> {
    for (const manager of this.managers.splice(0)) await manager.destroy();
  }
}
