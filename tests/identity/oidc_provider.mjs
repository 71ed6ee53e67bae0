// A real OpenID provider (the npm `oidc-provider` package) on 127.0.0.1 for the identity tests.
//
// node oidc_provider.mjs <node_modules> <config.json>
// config: {resource, keys_file, clients: [{id, secret, scope, groups, ttl}]}
// Prints one JSON line {"issuer", "port"} once listening. Resource indicators on, access
// tokens as JWTs (RFC 9068) for any resource a client names, client credentials and
// introspection enabled. POST /__test/rotate replaces the signing key (a new kid) and answers
// {"kid"}. Keys live in keys_file (created when missing), so a second provider started with the
// same file signs with the same key under another issuer. A client listed with
// `token_exchange: true` may also use RFC 8693 token exchange: it sends an access token this
// provider issued (subject_token) and a `resource` (or `audience`), and gets a JWT access token
// for that resource naming the same subject (`act` names the exchanging client). The package
// has no token exchange of its own; this grant handler (registerGrantType) is that.
//
// Introspection (RFC 7662), optional config keys: `opaque_resources` {<resource URL>: <client id
// of its resource server>}: tokens for such a resource are opaque (only introspection tells what
// they are), and only its resource server's client may introspect them (allowedPolicy, as a
// deployment would: one resource server may not read another's tokens); that client is listed in
// `clients` with `resource_server: true` (no grants, it only introspects). `login_client`
// {id, secret, redirect_uri}: a confidential client of the authorization code flow, so a token
// names a user (sub) who signs in through the provider's own login form (any password).
// Revocation is on (a client revokes its own tokens). GET /__test/introspections answers
// {"count"}: how many introspection requests the provider has answered.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, configPath] = process.argv.slice(2);
const { default: Provider } = await import(
  pathToFileURL(join(nodeModules, "oidc-provider", "lib", "index.js")).href
);
const jose = await import(pathToFileURL(join(nodeModules, "jose", "dist", "webapi", "index.js")).href);
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
const config = JSON.parse(readFileSync(configPath, "utf8"));

function newKey() {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid: `k-${randomUUID().slice(0, 8)}`, alg: "RS256", use: "sig" };
}

let keys;
if (existsSync(config.keys_file)) {
  keys = JSON.parse(readFileSync(config.keys_file, "utf8"));
} else {
  keys = [newKey()];
  writeFileSync(config.keys_file, JSON.stringify(keys));
}

const clients = Object.fromEntries(config.clients.map((c) => [c.id, c]));
const allScopes = "mcp:tools nexus:admin other:read";
const opaqueResources = config.opaque_resources ?? {};
const login = config.login_client;
let introspections = 0; // introspection requests answered (GET /__test/introspections)

function machineClient(c) {
  if (c.resource_server) {
    return { client_id: c.id, client_secret: c.secret, grant_types: [], response_types: [], redirect_uris: [] };
  }
  return {
    client_id: c.id,
    client_secret: c.secret,
    grant_types: c.token_exchange ? ["client_credentials", TOKEN_EXCHANGE] : ["client_credentials"],
    response_types: [],
    redirect_uris: [],
    scope: c.scope ?? allScopes,
    token_endpoint_auth_method: "client_secret_basic",
  };
}

function loginClient() {
  return {
    client_id: login.id,
    client_secret: login.secret,
    grant_types: ["authorization_code"],
    response_types: ["code"],
    redirect_uris: [login.redirect_uri],
    token_endpoint_auth_method: "client_secret_basic",
  };
}

function build(issuer) {
  const provider = new Provider(issuer, {
    clients: [...config.clients.map(machineClient), ...(login ? [loginClient()] : [])],
    cookies: { keys: ["identity-test-cookie-key"] },
    jwks: { keys },
    scopes: ["openid", ...allScopes.split(" ")],
    features: {
      devInteractions: { enabled: Boolean(login) },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      introspection: {
        enabled: true,
        // An opaque token's resource server may read it, and nobody else (not even the client
        // holding it: what it may do is the resource server's business).
        allowedPolicy: (ctx, client, token) => opaqueResources[token.aud] === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => config.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator, client) => ({
          scope: allScopes,
          audience: indicator,
          accessTokenTTL: clients[client.clientId]?.ttl ?? 600,
          ...(opaqueResources[indicator]
            ? { accessTokenFormat: "opaque" }
            : { accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } }),
        }),
      },
    },
    extraTokenClaims: (ctx, token) => {
      const groups = clients[token.clientId]?.groups;
      return groups ? { groups } : undefined;
    },
  });
  provider.on("server_error", (ctx, err) => console.error("server_error", err));
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route === "introspection") introspections += 1;
  });
  provider.registerGrantType(TOKEN_EXCHANGE, exchange, [
    "subject_token", "subject_token_type", "requested_token_type", "audience", "resource", "scope",
  ]);
  return provider;
}

function refuse(ctx, error, description) {
  ctx.status = 400;
  ctx.body = { error, error_description: description };
}

// RFC 8693: an access token of this provider, exchanged for one whose audience is `resource`.
async function exchange(ctx) {
  const { subject_token, subject_token_type, audience, resource, scope } = ctx.oidc.params;
  if (!subject_token || subject_token_type !== ACCESS_TOKEN_TYPE) {
    return refuse(ctx, "invalid_request", `subject_token of type ${ACCESS_TOKEN_TYPE} required`);
  }
  const target = resource || audience;
  if (!target) return refuse(ctx, "invalid_target", "resource or audience required");
  const publicKeys = keys.map(({ kty, n, e, kid, alg, use }) => ({ kty, n, e, kid, alg, use }));
  let claims;
  try {
    ({ payload: claims } = await jose.jwtVerify(subject_token, jose.createLocalJWKSet({ keys: publicKeys }), {
      issuer: ctx.oidc.provider.issuer,
    }));
  } catch (err) {
    return refuse(ctx, "invalid_grant", `subject_token: ${err.code || err.message}`);
  }
  const now = Math.floor(Date.now() / 1000);
  const key = await jose.importJWK(keys[0], "RS256");
  const ttl = 300;
  const token = await new jose.SignJWT({
    client_id: ctx.oidc.client.clientId,
    scope: scope || claims.scope,
    act: { sub: ctx.oidc.client.clientId },
    ...(claims.groups ? { groups: claims.groups } : {}),
  })
    .setProtectedHeader({ alg: "RS256", kid: keys[0].kid, typ: "at+jwt" })
    .setIssuer(ctx.oidc.provider.issuer)
    .setSubject(claims.sub)
    .setAudience(target)
    .setIssuedAt(now)
    .setExpirationTime(now + ttl)
    .setJti(randomUUID())
    .sign(key);
  ctx.body = {
    access_token: token,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: "Bearer",
    expires_in: ttl,
    scope: scope || claims.scope,
  };
}

let provider;
const server = http.createServer((req, res) => {
  if (req.method === "POST" && req.url === "/__test/rotate") {
    keys = [newKey()];
    writeFileSync(config.keys_file, JSON.stringify(keys));
    provider = build(provider.issuer);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ kid: keys[0].kid }));
    return;
  }
  if (req.method === "GET" && req.url === "/__test/introspections") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ count: introspections }));
    return;
  }
  provider.callback()(req, res);
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  provider = build(`http://127.0.0.1:${port}`);
  process.stdout.write(JSON.stringify({ issuer: provider.issuer, port }) + "\n");
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
