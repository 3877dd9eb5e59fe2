import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { mockApi } from '../../../test/fetch-mock';
import { FlowsPage } from './FlowsPage';
import { NOT_AVAILABLE } from '../sections';
import { MOVED, NOTHING_PUBLISHED } from './FlowEditor';
import { PREVIEW_PROBLEMS, PREVIEW_TITLE, previewSrc } from './FlowPreview';
import { NAME_RULE } from './FlowList';
import { ROUTING_MOVED, ROUTING_NOTHING_PUBLISHED } from './RoutingEditor';
import type { Dropoff, FlowScript, FlowsOverview, HistoryEntry } from './flows-api';

const SCRIPT: FlowScript = {
  greeting: "Hi, I'm {assistant}. What can I help you with today?",
  followUp: 'Sorry to hear that. When did it start?',
  troubleshooting: 'What have you tried so far?',
  unclearFollowUp: 'Could you tell me a bit more?',
  unclearTroubleshooting: 'Could you say what you tried?',
  finalChat: 'Our experts can walk you through every step. Start now for full access.',
  finalRefundable: 'Start now: the $1 setup fee is refundable.',
  helpIntro: 'Thanks for telling us about your issue.',
  typingDelayMinMs: 1500,
  typingDelayMaxMs: 2500,
  autoCheckoutAfterS: 15,
};

const EMAIL: FlowScript = { ...SCRIPT, greeting: 'Email trouble? I am {assistant}.' };

const AT = '2026-11-20T14:05:00Z';

function overview(changes: Partial<FlowsOverview> = {}): FlowsOverview {
  return {
    flows: [
      {
        name: 'default',
        published: 2,
        versions: [
          { version: 2, publishedAt: AT, publishedBy: 'ann@example.com' },
          { version: 1, publishedAt: '2026-11-01T09:00:00Z', publishedBy: 'config/funnels.toml' },
        ],
        script: SCRIPT,
        draft: null,
        usesKeyword: false,
        routedBy: ['default flow'],
      },
      {
        name: 'email',
        published: 1,
        versions: [{ version: 1, publishedAt: '2026-11-01T09:00:00Z', publishedBy: 'config/funnels.toml' }],
        script: EMAIL,
        draft: {
          script: { ...EMAIL, finalChat: '' },
          basedOn: 1,
          updatedAt: '2026-11-21T10:00:00Z',
          updatedBy: 'bob@example.com',
          problems: [],
        },
        usesKeyword: false,
        routedBy: ['campaign 2145', 'keyword email'],
      },
      {
        name: 'keyword',
        published: 1,
        versions: [{ version: 1, publishedAt: '2026-11-01T09:00:00Z', publishedBy: 'config/funnels.toml' }],
        script: { ...SCRIPT, greeting: 'Trouble with {keyword}?' },
        draft: null,
        usesKeyword: true,
        routedBy: ['keyword flow'],
      },
    ],
    routing: {
      version: 1,
      campaigns: { '2145': 'email' },
      keywords: { email: 'email' },
      keywordFlow: 'keyword',
      defaultFlow: 'default',
      publishedAt: '2026-11-01T09:00:00Z',
      publishedBy: 'config/funnels.toml',
    },
    placeholders: [
      { name: '{assistant}', meaning: "the assistant's name" },
      { name: '{product}', meaning: "the product's name" },
      { name: '{keyword}', meaning: "the topic of the ad's keyword" },
    ],
    fields: [
      { key: 'greeting', label: 'Greeting' },
      { key: 'followUp', label: 'Follow-up (stage 0)' },
      { key: 'troubleshooting', label: 'Troubleshooting question (stage 1)' },
      { key: 'unclearFollowUp', label: 'Reply to an unclear first message' },
      { key: 'unclearTroubleshooting', label: 'Reply to an unclear second message' },
      { key: 'finalChat', label: 'Final message, chat funnel' },
      { key: 'finalRefundable', label: 'Final message, refundable-fee funnel' },
      { key: 'helpIntro', label: "Help funnel's intro" },
    ],
    bounds: { textMaxChars: 600, typingMinMs: 500, typingMaxMs: 8000, autoCheckoutMinS: 5, autoCheckoutMaxS: 120 },
    ...changes,
  };
}

const HISTORY: HistoryEntry[] = [
  {
    at: AT,
    by: 'ann@example.com',
    kind: 'publish',
    flow: 'default',
    version: 2,
    fromVersion: 1,
    changes: [{ field: 'greeting', before: 'Hello there.', after: "Hi, I'm {assistant}." }],
  },
  { at: '2026-11-01T09:00:00Z', by: 'config/funnels.toml', kind: 'routing', flow: null, version: 1, fromVersion: null, changes: [] },
];

const DROPOFF: Dropoff = {
  from: '2026-11-01',
  to: '2026-11-30',
  steps: ['joined', 'first_message', 'checkout', 'month_paid'],
  flows: [
    {
      name: 'default',
      versions: [
        {
          version: 1,
          steps: [
            { step: 'joined', count: 100, medianMsToNext: 9_000 },
            { step: 'first_message', count: 50, medianMsToNext: 60_000 },
            { step: 'checkout', count: 10, medianMsToNext: 3 * 86_400_000, button: 6, automatic: 4 },
            { step: 'month_paid', count: 2, medianMsToNext: null },
          ],
        },
        {
          version: 2,
          steps: [
            { step: 'joined', count: 200, medianMsToNext: 4_300 },
            { step: 'first_message', count: 160, medianMsToNext: 120_000 },
            { step: 'checkout', count: 40, medianMsToNext: 7_200_000, button: 30, automatic: 10 },
            { step: 'month_paid', count: 8, medianMsToNext: null },
          ],
        },
      ],
    },
  ],
};

type Handlers = Parameters<typeof mockApi>[0];

/** The API as the contract answers it; `changes` replace any answer. */
function server(changes: Handlers = {}) {
  return mockApi({
    'GET /api/admin/flows': { body: overview() },
    'GET /api/admin/flows/history': { body: { entries: HISTORY } },
    'GET /api/admin/flows/dropoff': { body: DROPOFF },
    ...changes,
  });
}

function renderPage(path = '/admin/flows') {
  const router = createMemoryRouter(
    [
      { path: '/admin/flows', element: <FlowsPage /> },
      { path: '/admin', element: <h1>Dashboard</h1> },
      { path: '/', element: <h1>Home</h1> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

/** The requests made to `path` (method and path), with their JSON bodies. */
function requests(fetchMock: ReturnType<typeof mockApi>, method: string, path: string): unknown[] {
  return fetchMock.mock.calls
    .filter(([input, init]) => {
      const url = new URL(String(input), 'http://localhost');
      return url.pathname === path && (init?.method ?? 'GET') === method;
    })
    .map(([, init]) => (init?.body ? JSON.parse(String(init.body)) : null));
}

function field(label: string) {
  return screen.getByLabelText(label) as HTMLTextAreaElement | HTMLInputElement;
}

async function editorReady(name = 'default') {
  return screen.findByRole('heading', { level: 2, name: `Edit “${name}”` });
}

function described(element: HTMLElement): string {
  return (element.getAttribute('aria-describedby') ?? '')
    .split(' ')
    .map((id) => document.getElementById(id)?.textContent ?? '')
    .join(' | ');
}

describe('FlowsPage', () => {
  it('lists the flows with their versions, drafts and routes, and edits the default flow first', async () => {
    server();
    renderPage();

    const table = await screen.findByRole('table', { name: /where the routing sends visitors/ });
    const email = within(table).getByRole('row', { name: /email/ });
    expect(within(email).getByText('Version 1')).toBeTruthy();
    expect(within(email).getByText(/Saved 21 Nov 2026, 10:00 UTC/)).toBeTruthy();
    expect(within(email).getByText('campaign 2145, keyword email')).toBeTruthy();
    expect(within(table).getByText('Uses {keyword}')).toBeTruthy();

    await editorReady('default');
    const greeting = field('Greeting');
    expect(greeting.value).toBe(SCRIPT.greeting);
    expect(screen.getByTestId('flows-count-greeting').textContent).toBe('52 / 600');
    expect(described(greeting)).toContain('52 / 600');
    expect(screen.getByText('{assistant}')).toBeTruthy();
    expect(screen.getByText("the assistant's name")).toBeTruthy();
    expect(field('Shortest typing delay (ms)').value).toBe('1500');
    expect(described(field('Automatic checkout after (s)'))).toContain('From 5 to 120 s.');
    expect(screen.getByTestId('flows-editor-state').textContent).toContain('Version 2 is published.');
    // Nothing changed yet: nothing to publish.
    expect((screen.getByRole('button', { name: 'Publish draft' }) as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('flows-no-changes')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Back to the dashboard' }).getAttribute('href')).toBe('/admin');
  });

  it('says the page is not available when the server answers 404, as the dashboard does', async () => {
    server({ 'GET /api/admin/flows': { status: 404, body: { error: 'not_found', message: 'Not found' } } });
    renderPage();
    expect(await screen.findByText(NOT_AVAILABLE)).toBeTruthy();
    expect(screen.getByRole('heading', { level: 1, name: 'Flows' })).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Return to Home' })).toBeTruthy();
  });

  it('counts the characters as the text is typed, and marks a text over the limit', async () => {
    server();
    renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: 'x'.repeat(601) } });
    const count = screen.getByTestId('flows-count-greeting');
    expect(count.textContent).toBe('601 / 600');
    expect(count.getAttribute('data-over')).toBe('true');
    expect(screen.getByTestId('flows-editor-state').textContent).toContain('Unsaved changes.');
  });

  it('saves the draft from the published version and shows each problem at its field', async () => {
    const fetchMock = server({
      'PUT /api/admin/flows/default/draft': (init) => {
        const { script, basedOn } = JSON.parse(String(init?.body)) as { script: FlowScript; basedOn: number };
        return {
          body: {
            draft: {
              script,
              basedOn,
              updatedAt: '2026-11-22T08:00:00Z',
              updatedBy: 'ann@example.com',
              problems: [
                {
                  field: 'greeting',
                  message: '{nme} is not a placeholder. Use {assistant}, {product} or {keyword}, or take out the braces.',
                },
                { field: 'typingDelayMaxMs', message: 'The longest typing delay cannot be shorter than the shortest.' },
              ],
            },
          },
        };
      },
    });
    renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: 'Hello, I am {nme}.' } });
    fireEvent.change(field('Longest typing delay (ms)'), { target: { value: '1000' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save draft' }));

    expect(await screen.findByText(/The draft is saved, with 2 problems to fix/)).toBeTruthy();
    expect(requests(fetchMock, 'PUT', '/api/admin/flows/default/draft')).toEqual([
      { script: { ...SCRIPT, greeting: 'Hello, I am {nme}.', typingDelayMaxMs: 1000 }, basedOn: 2 },
    ]);
    const greeting = field('Greeting');
    expect(greeting.getAttribute('aria-invalid')).toBe('true');
    expect(described(greeting)).toContain('{nme} is not a placeholder.');
    const longest = field('Longest typing delay (ms)');
    expect(longest.getAttribute('aria-invalid')).toBe('true');
    expect(described(longest)).toContain('cannot be shorter than the shortest');
    expect(field('Follow-up (stage 0)').getAttribute('aria-invalid')).toBeNull();
    expect(within(screen.getByTestId('flows-problems')).getByRole('link', { name: 'Greeting' }).getAttribute('href')).toBe(
      '#flows-field-greeting',
    );
    expect(screen.getByTestId('flows-editor-state').textContent).toContain('Draft saved 22 Nov 2026, 08:00 UTC by ann@example.com');
    expect(screen.getByRole('button', { name: 'Discard draft' })).toBeTruthy();
  });

  it('reads no number it cannot, and sends nothing then', async () => {
    const fetchMock = server();
    renderPage();
    await editorReady();
    fireEvent.change(field('Automatic checkout after (s)'), { target: { value: '' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save draft' }));
    expect(await screen.findByText('Check the fields marked above.')).toBeTruthy();
    expect(described(field('Automatic checkout after (s)'))).toContain('Enter a whole number of seconds, from 5 to 120.');
    expect(requests(fetchMock, 'PUT', '/api/admin/flows/default/draft')).toEqual([]);
  });

  it('shows the changed fields only, before and after, the changed words marked', async () => {
    server();
    renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: "Hi, I'm {assistant}. How can I fix it today?" } });

    const changes = screen.getByRole('region', { name: 'Changes' });
    expect(within(changes).getByText(/1 field differs from version 2/)).toBeTruthy();
    const items = changes.querySelectorAll('.flows-change');
    expect(items).toHaveLength(1);
    expect(within(items[0] as HTMLElement).getByRole('heading', { name: 'Greeting' })).toBeTruthy();
    expect(Array.from(items[0].querySelectorAll('del')).map((node) => node.textContent)).toEqual([
      '[removed: What]',
      '[removed: help you with]',
    ]);
    expect(Array.from(items[0].querySelectorAll('ins')).map((node) => node.textContent)).toEqual([
      '[added: How]',
      '[added: fix it]',
    ]);
  });

  it('publishes behind a confirmation that names the version and the changes', async () => {
    let published = false;
    const fetchMock = server({
      'GET /api/admin/flows': () => {
        const data = overview();
        if (published) {
          data.flows[0] = {
            ...data.flows[0],
            published: 3,
            versions: [{ version: 3, publishedAt: AT, publishedBy: 'ann@example.com' }, ...data.flows[0].versions],
            script: { ...SCRIPT, greeting: 'Hello there!' },
          };
        }
        return { body: data };
      },
      'PUT /api/admin/flows/default/draft': (init) => ({
        body: {
          draft: {
            ...(JSON.parse(String(init?.body)) as object),
            updatedAt: AT,
            updatedBy: 'ann@example.com',
            problems: [],
          },
        },
      }),
      'POST /api/admin/flows/default/publish': () => {
        published = true;
        return { body: { version: 3 } };
      },
    });
    renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: 'Hello there!' } });
    fireEvent.click(screen.getByRole('button', { name: 'Publish draft' }));

    const dialog = await screen.findByRole('dialog', { name: 'Publish version 3' });
    expect(dialog.textContent).toContain('get version 3 within 2 seconds: 1 field changes from version 2');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Publish version 3' }));

    expect(await screen.findByText(/Version 3 of “default” is published/)).toBeTruthy();
    expect(screen.queryByRole('dialog')).toBeNull();
    // The unsaved text was saved first, then published from the version it started from.
    expect(requests(fetchMock, 'PUT', '/api/admin/flows/default/draft')).toHaveLength(1);
    expect(requests(fetchMock, 'POST', '/api/admin/flows/default/publish')).toEqual([{ basedOn: 2 }]);
    await waitFor(() => expect(screen.getByTestId('flows-editor-state').textContent).toContain('Version 3 is published.'));
    expect(field('Greeting').value).toBe('Hello there!');
    expect(document.activeElement).toBe(screen.getByTestId('flows-notice'));
  });

  it('publishes nothing when the server finds problems, and marks them at their fields', async () => {
    const fetchMock = server({
      'POST /api/admin/flows/email/publish': {
        status: 422,
        body: {
          code: 'invalid',
          error: 'Nothing was published: the draft has problems.',
          problems: [{ field: 'finalChat', message: 'Final message, chat funnel is empty.' }],
        },
      },
    });
    renderPage('/admin/flows?edit=email');
    await editorReady('email');
    expect(screen.getByTestId('flows-editor-state').textContent).toContain(
      'Draft saved 21 Nov 2026, 10:00 UTC by bob@example.com, started from version 1.',
    );
    fireEvent.click(screen.getByRole('button', { name: 'Publish draft' }));
    const dialog = await screen.findByRole('dialog', { name: 'Publish version 2' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Publish version 2' }));

    const alert = await screen.findByText(NOTHING_PUBLISHED);
    expect(alert.closest('[role="alert"]')).toBeTruthy();
    expect(screen.queryByRole('dialog')).toBeNull();
    const finalChat = field('Final message, chat funnel');
    expect(finalChat.getAttribute('aria-invalid')).toBe('true');
    expect(described(finalChat)).toContain('Final message, chat funnel is empty.');
    // The saved draft was published as it is: not saved again.
    expect(requests(fetchMock, 'PUT', '/api/admin/flows/email/draft')).toEqual([]);
    expect(requests(fetchMock, 'POST', '/api/admin/flows/email/publish')).toEqual([{ basedOn: 1 }]);
  });

  it('says so when someone published meanwhile, and compares the draft with theirs after a reload', async () => {
    let moved = false;
    server({
      'GET /api/admin/flows': () => {
        const data = overview();
        if (moved) {
          data.flows[1] = {
            ...data.flows[1],
            published: 2,
            versions: [{ version: 2, publishedAt: AT, publishedBy: 'cy@example.com' }, ...data.flows[1].versions],
          };
        }
        return { body: data };
      },
      'POST /api/admin/flows/email/publish': () => {
        moved = true;
        return { status: 409, body: { code: 'moved', error: 'Someone published meanwhile.' } };
      },
    });
    renderPage('/admin/flows?edit=email');
    await editorReady('email');
    fireEvent.click(screen.getByRole('button', { name: 'Publish draft' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Publish version 2' }));

    expect(await screen.findByText(MOVED)).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Reload' }));
    expect(await screen.findByText(/Your draft is now compared with version 2, the one published/)).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Publish draft' })).toBeTruthy();
  });

  it('discards the draft behind a confirmation', async () => {
    let discarded = false;
    const fetchMock = server({
      'GET /api/admin/flows': () => {
        const data = overview();
        if (discarded) data.flows[1] = { ...data.flows[1], draft: null };
        return { body: data };
      },
      // The server answers 204; the mock cannot send a body-less answer, and the page reads none.
      'DELETE /api/admin/flows/email/draft': () => {
        discarded = true;
        return { status: 200, body: null };
      },
    });
    renderPage('/admin/flows?edit=email');
    await editorReady('email');
    expect(field('Final message, chat funnel').value).toBe('');
    fireEvent.click(screen.getByRole('button', { name: 'Discard draft' }));
    const dialog = await screen.findByRole('dialog', { name: 'Discard the draft' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Discard draft' }));
    expect(await screen.findByText(/The draft of “email” is discarded/)).toBeTruthy();
    expect(requests(fetchMock, 'DELETE', '/api/admin/flows/email/draft')).toEqual([null]);
    await waitFor(() => expect(field('Final message, chat funnel').value).toBe(EMAIL.finalChat));
  });

  it('tries the draft in the real funnel page, on a desktop or a phone, and starts over', async () => {
    let previews = 0;
    const fetchMock = server({
      'POST /api/admin/flows/default/preview': () => {
        previews += 1;
        return { status: 201, body: { previewId: `pv${previews}`, expiresAt: '2026-11-22T09:00:00Z' } };
      },
    });
    renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: 'Hello from the draft!' } });
    const preview = screen.getByRole('region', { name: 'Try it' });
    fireEvent.click(within(preview).getByRole('button', { name: 'Try it' }));

    const frame = (await screen.findByTitle(PREVIEW_TITLE)) as HTMLIFrameElement;
    expect(frame.getAttribute('src')).toBe('/chat-help?preview=pv1');
    expect(requests(fetchMock, 'POST', '/api/admin/flows/default/preview')).toEqual([
      { script: { ...SCRIPT, greeting: 'Hello from the draft!' } },
    ]);
    expect(screen.getByTestId('flows-preview-device').getAttribute('data-device')).toBe('desktop');
    fireEvent.click(within(preview).getByRole('button', { name: 'Phone' }));
    expect(screen.getByTestId('flows-preview-device').getAttribute('data-device')).toBe('phone');
    expect(within(preview).getByRole('button', { name: 'Phone' }).getAttribute('aria-pressed')).toBe('true');

    fireEvent.change(within(preview).getByLabelText('Funnel'), { target: { value: 'refundable' } });
    fireEvent.change(within(preview).getByLabelText('Keyword (optional)'), { target: { value: 'printer offline' } });
    fireEvent.click(within(preview).getByRole('button', { name: 'Start over' }));
    await waitFor(() =>
      expect(screen.getByTitle(PREVIEW_TITLE).getAttribute('src')).toBe('/Chat-Help-2?preview=pv2&keyword=printer+offline'),
    );
  });

  it('shows the problems a preview is refused for at their fields', async () => {
    server({
      'POST /api/admin/flows/default/preview': {
        status: 422,
        body: { code: 'invalid', error: 'The draft has problems.', problems: [{ field: 'greeting', message: 'Greeting is empty.' }] },
      },
    });
    renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: ' ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Try it' }));
    expect(await screen.findByText(PREVIEW_PROBLEMS)).toBeTruthy();
    expect(field('Greeting').getAttribute('aria-invalid')).toBe('true');
    expect(described(field('Greeting'))).toContain('Greeting is empty.');
    expect(screen.queryByTitle(PREVIEW_TITLE)).toBeNull();
  });

  it('makes the address of the preview page', () => {
    expect(previewSrc('p1', 'chat', '')).toBe('/chat-help?preview=p1');
    expect(previewSrc('p 2', 'refundable', ' email ')).toBe('/Chat-Help-2?preview=p+2&keyword=email');
  });

  it('lists the versions, shows one, and rolls back behind a confirmation', async () => {
    const fetchMock = server({
      'GET /api/admin/flows/default/versions/1': {
        body: { name: 'default', version: 1, script: { ...SCRIPT, greeting: 'Hello there.' }, publishedAt: AT, publishedBy: 'x' },
      },
      'POST /api/admin/flows/default/rollback': { body: { published: 1 } },
    });
    renderPage();
    await editorReady();
    const versions = screen.getByRole('region', { name: 'Versions of “default”' });
    expect(within(versions).getByRole('row', { name: /Version 2/ }).getAttribute('aria-current')).toBe('true');

    fireEvent.click(within(versions).getByRole('button', { name: 'View version 1' }));
    expect(await within(screen.getByTestId('flows-version-view')).findByText('Hello there.')).toBeTruthy();

    fireEvent.click(within(versions).getByRole('button', { name: 'Roll back to version 1' }));
    const dialog = await screen.findByRole('dialog', { name: 'Roll back to version 1' });
    expect(dialog.textContent).toContain('get version 1 again within 2 seconds, instead of version 2');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Roll back to version 1' }));
    expect(await screen.findByText(/“default” is back to version 1/)).toBeTruthy();
    expect(requests(fetchMock, 'POST', '/api/admin/flows/default/rollback')).toEqual([{ version: 1 }]);
  });

  it('shows who published what and when, with the fields changed', async () => {
    server();
    renderPage();
    const entries = await screen.findAllByTestId('flows-history-entry');
    expect(entries.map((entry) => entry.querySelector('.flows-history__what')?.textContent)).toEqual([
      'Published “default” version 2 (from version 1)',
      'Published routing version 1',
    ]);
    expect(within(entries[0]).getByText('20 Nov 2026, 14:05 UTC by ann@example.com')).toBeTruthy();
    expect(within(entries[0]).getByText('Changed: Greeting')).toBeTruthy();
  });

  it('creates a new flow as a copy of another, and edits it', async () => {
    let created = false;
    const fetchMock = server({
      'GET /api/admin/flows': () => {
        const data = overview();
        if (created) {
          data.flows.push({
            name: 'summer',
            published: null,
            versions: [],
            script: null,
            draft: { script: EMAIL, basedOn: null, updatedAt: AT, updatedBy: 'ann@example.com', problems: [] },
            usesKeyword: false,
            routedBy: [],
          });
        }
        return { body: data };
      },
      'POST /api/admin/flows': () => {
        created = true;
        return {
          status: 201,
          body: { draft: { script: EMAIL, basedOn: null, updatedAt: AT, updatedBy: 'ann@example.com', problems: [] } },
        };
      },
    });
    const router = renderPage();
    await editorReady();
    fireEvent.click(screen.getByRole('button', { name: 'New flow' }));
    const form = screen.getByRole('form', { name: 'New flow' });
    fireEvent.change(within(form).getByLabelText('Name'), { target: { value: 'Summer Sale' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Create flow' }));
    expect(within(form).getByText(NAME_RULE)).toBeTruthy();
    expect(within(form).getByLabelText('Name').getAttribute('aria-invalid')).toBe('true');

    fireEvent.change(within(form).getByLabelText('Name'), { target: { value: 'summer' } });
    fireEvent.change(within(form).getByLabelText('Copy from'), { target: { value: 'email' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Create flow' }));

    await editorReady('summer');
    expect(requests(fetchMock, 'POST', '/api/admin/flows')).toEqual([{ name: 'summer', copyFrom: 'email' }]);
    expect(router.state.location.search).toContain('edit=summer');
    expect(await screen.findByText(/The flow “summer” is created as a draft, copied from “email”/)).toBeTruthy();
    expect(field('Greeting').value).toBe(EMAIL.greeting);
    fireEvent.click(screen.getByRole('button', { name: 'Publish draft' }));
    expect((await screen.findByRole('dialog', { name: 'Publish version 1' })).textContent).toContain(
      '“summer” gets its first version, 1, with its 11 fields.',
    );
  });

  it('asks before another flow is edited when the changes are not saved', async () => {
    server();
    const router = renderPage();
    await editorReady();
    fireEvent.change(field('Greeting'), { target: { value: 'Unsaved words' } });
    fireEvent.click(screen.getByRole('button', { name: 'Edit email' }));
    const dialog = await screen.findByRole('dialog', { name: 'Leave your unsaved changes?' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Keep editing' }));
    expect(field('Greeting').value).toBe('Unsaved words');

    fireEvent.click(screen.getByRole('button', { name: 'Edit email' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Leave without saving' }));
    await editorReady('email');
    expect(router.state.location.search).toBe('?edit=email');
  });
});

describe('the routing', () => {
  it('publishes the routing behind a confirmation, and shows its problems at their fields', async () => {
    const fetchMock = server({
      'PUT /api/admin/flows/routing': {
        status: 422,
        body: {
          code: 'invalid',
          error: 'Nothing was published.',
          problems: [
            { field: 'campaigns.999', message: 'There is no published flow "gone".' },
            { field: 'keywords.printer help', message: 'The flow "keyword" uses {keyword}, which is fine here.' },
          ],
        },
      },
    });
    renderPage();
    const routing = await screen.findByRole('region', { name: 'Routing' });
    expect((within(routing).getByLabelText('Default flow') as HTMLSelectElement).value).toBe('default');
    expect((within(routing).getByLabelText('Keyword flow') as HTMLSelectElement).value).toBe('keyword');
    expect((within(routing).getByRole('button', { name: 'Publish routing' }) as HTMLButtonElement).disabled).toBe(true);

    fireEvent.click(within(routing).getByRole('button', { name: 'Add a campaign' }));
    const added = within(routing).getByRole('group', { name: 'Campaign route 2' });
    expect(within(added).getByText('Enter the campaign id.')).toBeTruthy();
    fireEvent.change(within(added).getByLabelText('Campaign id'), { target: { value: '999' } });
    fireEvent.click(within(routing).getByRole('button', { name: 'Add a keyword' }));
    const keyword = within(routing).getByRole('group', { name: 'Keyword route 2' });
    fireEvent.change(within(keyword).getByLabelText('Keyword'), { target: { value: ' Printer  Help ' } });
    fireEvent.change(within(keyword).getByLabelText('Flow'), { target: { value: 'keyword' } });
    fireEvent.change(within(routing).getByLabelText('Default flow'), { target: { value: 'email' } });

    fireEvent.click(within(routing).getByRole('button', { name: 'Publish routing' }));
    const dialog = await screen.findByRole('dialog', { name: 'Publish routing version 2' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Publish routing' }));

    expect(await within(routing).findByText(ROUTING_NOTHING_PUBLISHED)).toBeTruthy();
    expect(requests(fetchMock, 'PUT', '/api/admin/flows/routing')).toEqual([
      {
        routing: {
          defaultFlow: 'email',
          keywordFlow: 'keyword',
          campaigns: { '2145': 'email', '999': 'default' },
          keywords: { email: 'email', 'printer help': 'keyword' },
        },
        basedOn: 1,
      },
    ]);
    const campaign = within(added).getByLabelText('Campaign id');
    expect(campaign.getAttribute('aria-invalid')).toBe('true');
    expect(described(campaign)).toBe('There is no published flow "gone".');
    expect(within(keyword).getByLabelText('Keyword').getAttribute('aria-invalid')).toBe('true');
    expect(within(routing).getByRole('group', { name: 'Campaign route 1' }).querySelector('[aria-invalid]')).toBeNull();
  });

  it('says so when the routing moved meanwhile, and reloads it', async () => {
    let version = 1;
    server({
      'GET /api/admin/flows': () => {
        const data = overview();
        data.routing = { ...data.routing, version, campaigns: version > 1 ? {} : data.routing.campaigns };
        return { body: data };
      },
      'PUT /api/admin/flows/routing': () => {
        version = 2;
        return { status: 409, body: { code: 'moved', error: 'moved' } };
      },
    });
    renderPage();
    const routing = await screen.findByRole('region', { name: 'Routing' });
    fireEvent.click(within(routing).getByRole('button', { name: 'Remove campaign 2145' }));
    fireEvent.click(within(routing).getByRole('button', { name: 'Publish routing' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Publish routing' }));
    expect(await within(routing).findByText(ROUTING_MOVED)).toBeTruthy();
    fireEvent.click(within(routing).getByRole('button', { name: 'Reload' }));
    expect(await screen.findByText(/Reloaded: routing version 2 is the one published/)).toBeTruthy();
    expect(screen.getByTestId('flows-routing-state').textContent).toContain('Version 2,');
  });

  it('publishes a change and says so', async () => {
    const fetchMock = server({ 'PUT /api/admin/flows/routing': { body: { version: 2 } } });
    renderPage();
    const routing = await screen.findByRole('region', { name: 'Routing' });
    fireEvent.change(within(routing).getByLabelText('Keyword flow'), { target: { value: '' } });
    fireEvent.click(within(routing).getByRole('button', { name: 'Publish routing' }));
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Publish routing' }));
    expect(await screen.findByText(/Routing version 2 is published/)).toBeTruthy();
    expect((requests(fetchMock, 'PUT', '/api/admin/flows/routing')[0] as { routing: { keywordFlow: null } }).routing.keywordFlow).toBeNull();
  });
});

describe('the drop-off', () => {
  it('shows each flow’s versions side by side: counts, shares and median times', async () => {
    server();
    renderPage();
    const table = await screen.findByRole('table', { name: /How many conversations of “default” reached each step/ });
    expect(within(table).getAllByRole('columnheader').map((cell) => cell.textContent)).toEqual([
      'Step',
      'Version 1',
      'Version 2',
      'Count',
      '% of joined',
      '% of step before',
      'Median time to next',
      'Count',
      '% of joined',
      '% of step before',
      'Median time to next',
    ]);
    const cells = (step: string) =>
      within(within(table).getByRole('row', { name: new RegExp(`^${step}`) }))
        .getAllByRole('cell')
        .map((cell) => cell.textContent);
    expect(cells('Joined')).toEqual(['100', '100.0%', '–', '9 s', '200', '100.0%', '–', '4.3 s']);
    expect(cells('First message')).toEqual(['50', '50.0%', '50.0%', '1 min', '160', '80.0%', '80.0%', '2 min']);
    expect(cells('Checkout opened')).toEqual([
      '10button 6 / automatic 4',
      '10.0%',
      '20.0%',
      '3 d',
      '40button 30 / automatic 10',
      '20.0%',
      '25.0%',
      '2 h',
    ]);
    expect(cells('First month paid')).toEqual(['2', '2.0%', '20.0%', '–', '8', '4.0%', '20.0%', '–']);
    expect(screen.getByRole('img', { name: /Drop-off of default by step: version 1: 100 joined, 2 first month paid/ })).toBeTruthy();
  });

  it('keeps its filters in the address, asks the server for them, and downloads the same as CSV', async () => {
    const fetchMock = server();
    const router = renderPage(
      '/admin/flows?edit=email&from=2026-11-01&to=2026-11-30&funnel=refundable&flow=email&campaign=2145&keyword=printer',
    );
    const region = await screen.findByRole('region', { name: 'Drop-off by step' });
    await waitFor(() => expect(requests(fetchMock, 'GET', '/api/admin/flows/dropoff').length).toBeGreaterThan(0));
    const asked = () =>
      fetchMock.mock.calls
        .map(([input]) => new URL(String(input), 'http://localhost'))
        .filter((url) => url.pathname === '/api/admin/flows/dropoff')
        .map((url) => url.search);
    expect(asked()).toEqual(['?from=2026-11-01&to=2026-11-30&funnel=refundable&flow=email&campaign=2145&keyword=printer']);
    expect((within(region).getByLabelText('Funnel') as HTMLSelectElement).value).toBe('refundable');
    expect((within(region).getByLabelText('Campaign id') as HTMLInputElement).value).toBe('2145');
    expect(within(region).getByRole('link', { name: 'Download CSV' }).getAttribute('href')).toBe(
      '/api/admin/flows/dropoff?from=2026-11-01&to=2026-11-30&funnel=refundable&flow=email&campaign=2145&keyword=printer&format=csv',
    );

    fireEvent.change(within(region).getByLabelText('Funnel'), { target: { value: 'chat' } });
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('funnel')).toBe('chat'));
    expect(new URLSearchParams(router.state.location.search).get('edit')).toBe('email');
    await waitFor(() => expect(asked().at(-1)).toContain('funnel=chat'));

    const keyword = within(region).getByLabelText('Keyword');
    fireEvent.change(keyword, { target: { value: 'wifi' } });
    fireEvent.blur(keyword);
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('keyword')).toBe('wifi'));

    fireEvent.click(within(region).getByRole('button', { name: 'Last 7 days' }));
    await waitFor(() => expect(within(region).getByRole('button', { name: 'Last 7 days' }).getAttribute('aria-pressed')).toBe('true'));

    await act(async () => {
      await router.navigate(-1);
    });
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('from')).toBe('2026-11-01'));
  });

  it('says so when nobody came, and when the drop-off cannot be read', async () => {
    server({ 'GET /api/admin/flows/dropoff': { body: { ...DROPOFF, flows: [] } } });
    renderPage();
    expect(await screen.findByText('No conversations in these days.')).toBeTruthy();
  });

  it('offers to try again when the drop-off cannot be read', async () => {
    let calls = 0;
    server({
      'GET /api/admin/flows/dropoff': () => {
        calls += 1;
        return calls === 1 ? { status: 500, body: { error: 'internal', message: 'x' } } : { body: DROPOFF };
      },
    });
    renderPage();
    expect(await screen.findByText('The drop-off could not be read. Please try again.')).toBeTruthy();
    const region = screen.getByRole('region', { name: 'Drop-off by step' });
    fireEvent.click(within(region).getByRole('button', { name: 'Try again' }));
    expect(await screen.findByRole('table', { name: /reached each step/ })).toBeTruthy();
  });
});
