// Writes dist/pages/<page>.html: index.html with the chunks and styles of the page a route opens
// named in its head, so the browser fetches them beside the app's own code instead of after it.
// The server answers a route with its page's file, and with index.html where there is none
// (src/routes/web_app.rs). Run after `vite build`, which writes the manifest this reads.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');

// A route's page file is named by its path's first segment ('home' for '/'); each names the
// module its route loads in src/app/routes.tsx.
const PAGES = {
  home: 'src/app/pages/MembersPage.tsx',
  members: 'src/app/pages/MembersPage.tsx',
  landing: 'src/app/pages/LandingPage.tsx',
  'get-help': 'src/features/funnels/HelpFunnelPage.tsx',
  funnel: 'src/features/funnels/HelpFunnelPage.tsx',
  'chat-help': 'src/features/funnels/ChatFunnelPage.tsx',
  'Chat-Help-2': 'src/features/funnels/ChatFunnelPage.tsx',
  'email-help': 'src/features/funnels/ChatFunnelPage.tsx',
  login: 'src/features/auth/LoginPage.tsx',
  signup: 'src/features/auth/SignupPage.tsx',
  'account-setup': 'src/features/account-setup/AccountSetupPage.tsx',
  'checkout-success': 'src/features/checkout/CheckoutSuccessPage.tsx',
  admin: 'src/features/admin/AdminDashboardPage.tsx',
  // /admin/flows: served admin.html by its first segment, as /admin/checkout-debug is; named
  // here so that its page chunk is known.
  flows: 'src/features/admin/flows/FlowsPage.tsx',
  experiments: 'src/features/admin/experiments/ExperimentsPage.tsx',
  'checkout-debug': 'src/features/checkout-debug/CheckoutDebugPage.tsx',
  'demo-checkout': 'src/features/checkout/DemoCheckoutPage.tsx',
};

const manifest = JSON.parse(await readFile(path.join(dist, '.vite', 'manifest.json'), 'utf8'));
const index = await readFile(path.join(dist, 'index.html'), 'utf8');
const entry = manifest['index.html'];

// Every page module the app loads must have a file here, so a new page is not forgotten.
const missing = (entry.dynamicImports ?? [])
  .filter((module) => module.includes('Page') && !Object.values(PAGES).includes(module));
if (missing.length > 0) throw new Error(`route-pages.mjs names no route for ${missing.join(', ')}`);

/** The chunk of `key` and, depth first, the chunks it imports, and their styles. */
function closure(key, seen = new Set()) {
  if (seen.has(key)) return seen;
  seen.add(key);
  for (const imported of manifest[key]?.imports ?? []) closure(imported, seen);
  return seen;
}

const inIndex = closure('index.html');
await mkdir(path.join(dist, 'pages'), { recursive: true });
for (const [name, module] of Object.entries(PAGES)) {
  if (!manifest[module]?.isDynamicEntry) throw new Error(`${module} (${name}) is not a page chunk of this build`);
  const chunks = [...closure(module)].filter((key) => !inIndex.has(key));
  const scripts = chunks.map((key) => `    <link rel="modulepreload" crossorigin href="/${manifest[key].file}">`);
  const styles = chunks
    .flatMap((key) => manifest[key].css ?? [])
    .filter((file) => !index.includes(`/${file}"`))
    .map((file) => `    <link rel="stylesheet" crossorigin href="/${file}">`);
  const html = index.replace('  </head>', [...scripts, ...styles, '  </head>'].join('\n'));
  if (html === index && scripts.length + styles.length > 0) throw new Error('index.html has no </head> to add to');
  await writeFile(path.join(dist, 'pages', `${name}.html`), html);
}
console.log(`route pages: ${Object.keys(PAGES).length} in ${path.relative(process.cwd(), path.join(dist, 'pages'))}`);
