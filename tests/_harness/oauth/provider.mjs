// A real OAuth 2.1 / OpenID authorization server for the tests: oidc-provider (npm), configured
// by one JSON argument, on 127.0.0.1 only.
//
//   node provider.mjs <oidc-provider package folder> '<json settings>'
//
// Settings: port, clients (pre-registered client metadata), users ({login: password}),
// resource_scopes (scopes of every resource server), access_token_ttl (seconds),
// rotate_refresh_tokens (bool), exchange_audiences (resources the token-exchange grant may
// target; empty: any), exchange_refused (subjects whose tokens it never exchanges),
// client_metadata_ca (a PEM file: turns on Client ID Metadata Documents, below).
//
// Besides what oidc-provider does out of the box (authorization code + PKCE, dev login and
// consent pages, dynamic registration, client credentials, refresh, revocation, introspection,
// resource indicators with JWT access tokens), two grants are registered through the provider's
// own extension API (`registerGrantType`):
//   - RFC 8693 token exchange: a JWT access token of this issuer (subject_token) becomes one for
//     the requested `resource` (or `audience`), same subject, `act: {sub: <client id>}`;
//   - `password` (test only): a user's login and password give that user's access token for a
//     `resource`, so tests mint callers' JWTs without a browser.
// The dev login form checks the password too (oidc-provider's dev interactions accept any).
//
// With client_metadata_ca, oidc-provider's own Client ID Metadata Document support (its
// experimental `clientIdMetadataDocument` feature, draft-02) is on: an https `client_id` is
// fetched as the client's metadata, and the metadata advertises
// `client_id_metadata_document_supported`. Its fetches (the provider's `fetch` option) trust
// that CA and may reach 127.0.0.1, where the tests serve the documents.

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [packageDir, rawSettings] = process.argv.slice(2);
const settings = JSON.parse(rawSettings);
const load = (...parts) => import(pathToFileURL(join(packageDir, ...parts)).href);
const { default: Provider, errors } = await load('lib', 'index.js');
const jose = await load('..', 'jose', 'dist', 'webapi', 'index.js');

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const issuer = `http://127.0.0.1:${settings.port}`;
const users = settings.users ?? {};
const resourceScopes = settings.resource_scopes ?? 'notes:read notes:write';
const ttl = settings.access_token_ttl ?? 300;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', alg: 'RS256', use: 'sig' };
const { d, p, q, dp, dq, qi, ...publicJwk } = signing;
const ownKeys = jose.createLocalJWKSet({ keys: [publicJwk] });

function resourceServer(indicator) {
  const allowed = settings.exchange_audiences;
  const info = { scope: resourceScopes, audience: indicator, accessTokenFormat: 'jwt', accessTokenTTL: ttl };
  return { ...info, allowed: !allowed?.length || allowed.includes(indicator), identifier: () => indicator };
}

function findAccount(ctx, id) {
  if (!Object.hasOwn(users, id)) return undefined;
  return { accountId: id, claims: () => ({ sub: id, name: id, email: `${id}@example.test` }) };
}

// The provider's fetches (client metadata documents) over node:https, trusting only `ca`.
function fetchTrusting(ca) {
  return (url, { method, headers, signal }) => new Promise((resolve, reject) => {
    const options = { method, headers: Object.fromEntries(headers), ca, signal };
    const sent = request(url, options, (answer) => {
      const chunks = [];
      answer.on('data', (chunk) => chunks.push(chunk));
      answer.on('error', reject);
      answer.on('end', () => resolve(new Response(Buffer.concat(chunks), {
        status: answer.statusCode,
        headers: Object.entries(answer.headers).map(([name, value]) => [name, String(value)]),
      })));
    });
    sent.on('error', reject);
    sent.end();
  });
}

const metadataCa = settings.client_metadata_ca ? readFileSync(settings.client_metadata_ca) : undefined;
const cimd = metadataCa ? { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } } : {};

const provider = new Provider(issuer, {
  ...(metadataCa ? { fetch: fetchTrusting(metadataCa) } : {}),
  clients: settings.clients ?? [],
  findAccount,
  jwks: { keys: [signing] },
  cookies: { keys: ['a cookie key for tests only'] },
  scopes: ['openid', 'offline_access', ...resourceScopes.split(' ')],
  claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
  pkce: { required: () => true },
  clientBasedCORS: () => true,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: () => settings.rotate_refresh_tokens ?? true,
  ttl: { AccessToken: ttl, ClientCredentials: ttl, RefreshToken: 24 * 3600, Grant: 24 * 3600 },
  extraTokenClaims: (ctx, token) => (token.gty === TOKEN_EXCHANGE ? { act: { sub: token.clientId } } : undefined),
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => resourceServer(indicator),
    },
    ...cimd,
  },
});
provider.proxy = false;

async function issue(ctx, accountId, gty) {
  const { client, params } = ctx.oidc;
  const target = params.resource ?? params.audience;
  if (!target) throw new errors.InvalidTarget('name the target with resource or audience');
  const server = resourceServer(Array.isArray(target) ? target[0] : target);
  if (!server.allowed) throw new errors.InvalidTarget(`no exchange for ${server.audience}`);
  const granted = new Set(server.scope.split(' '));
  const asked = params.scope ? params.scope.split(' ') : [...granted];
  const scope = asked.filter((s) => granted.has(s)).join(' ') || undefined;
  const token = new provider.AccessToken({ accountId, client, scope, gty });
  token.resourceServer = server;
  ctx.oidc.entity('AccessToken', token);
  const value = await token.save();
  return { access_token: value, token_type: 'Bearer', expires_in: token.expiration, scope };
}

async function tokenExchange(ctx) {
  const { params } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  let subject;
  try {
    ({ payload: subject } = await jose.jwtVerify(params.subject_token, ownKeys, { issuer }));
  } catch {
    throw new errors.InvalidGrant('subject_token is invalid or expired');
  }
  if ((settings.exchange_refused ?? []).includes(subject.sub)) {
    throw new errors.InvalidGrant(`${subject.sub} may not act through this client`);
  }
  const body = await issue(ctx, subject.sub, TOKEN_EXCHANGE);
  ctx.body = { ...body, issued_token_type: ACCESS_TOKEN_TYPE };
}

async function passwordGrant(ctx) {
  const { username, password } = ctx.oidc.params;
  if (!Object.hasOwn(users, username) || users[username] !== password) {
    throw new errors.InvalidGrant('invalid username or password');
  }
  ctx.body = await issue(ctx, username, 'password');
}

const exchangeParams = ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope'];
provider.registerGrantType(TOKEN_EXCHANGE, tokenExchange, exchangeParams, ['resource', 'audience']);
provider.registerGrantType('password', passwordGrant, ['username', 'password', 'resource', 'scope'], ['resource']);

// The dev login form: refuse a wrong password (oidc-provider's dev interactions take any).
provider.use(async (ctx, next) => {
  if (ctx.method === 'POST' && /^\/interaction\/[^/]+$/.test(ctx.path)) {
    const chunks = [];
    for await (const chunk of ctx.req) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString();
    const form = new URLSearchParams(body);
    const login = form.get('login');
    if (form.get('prompt') === 'login' && (!Object.hasOwn(users, login) || users[login] !== form.get('password'))) {
      ctx.status = 401;
      ctx.type = 'html';
      ctx.body = '<!DOCTYPE html><p class="error">Invalid login or password.</p>';
      return;
    }
    ctx.req.body = body;
  }
  await next();
});

provider.listen(settings.port, '127.0.0.1', () => {
  process.stdout.write(`oidc-provider listening on ${issuer}\n`);
});
