// The Flows page's routing editor and an experiment's promoted offers (issue 48): shown read-only,
// and sent back unchanged when the routing is published.
import { fireEvent, render, screen, within } from '@testing-library/react';
import { mockApi } from '../../../test/fetch-mock';
import type { PublishedRouting } from '../flows/flows-api';
import { offerRouteText, RoutingEditor } from '../flows/RoutingEditor';
import { requests } from './test-fixtures';

const ROUTING: PublishedRouting = {
  version: 3,
  campaigns: { '2145': 'email' },
  keywords: {},
  keywordFlow: null,
  defaultFlow: 'default',
  offers: { '123': 'refundable', '77': 'help' },
  publishedAt: '2026-11-20T14:05:00Z',
  publishedBy: 'ann@example.com',
};

function renderEditor(routing: PublishedRouting) {
  const onPublished = vi.fn<(text: string) => Promise<void>>(async () => undefined);
  render(
    <RoutingEditor
      routing={routing}
      flows={['default', 'email']}
      notice={null}
      onPublished={onPublished}
      onReload={async () => undefined}
    />,
  );
  return onPublished;
}

async function publish() {
  fireEvent.click(screen.getByRole('button', { name: 'Publish routing' }));
  fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Publish routing' }));
}

describe('the routing’s offers', () => {
  it('lists each campaign’s offer, read-only', () => {
    mockApi();
    renderEditor(ROUTING);
    const list = screen.getByTestId('flows-offer-routes');
    expect(within(list).getAllByRole('listitem').map((item) => item.textContent)).toEqual([
      'Campaign 123 → refundable-fee chat (/Chat-Help-2)',
      'Campaign 77 → help form (/get-help)',
    ]);
    expect(within(list).queryByRole('textbox')).toBeNull();
    expect(within(list).queryByRole('combobox')).toBeNull();
    expect(offerRouteText('5', 'chat')).toBe('Campaign 5 → chat funnel (/chat-help)');
  });

  it('keeps the offers when the routing is published', async () => {
    const fetchMock = mockApi({ 'PUT /api/admin/flows/routing': { body: { version: 4 } } });
    const onPublished = renderEditor(ROUTING);
    fireEvent.change(screen.getByLabelText('Default flow'), { target: { value: 'email' } });
    await publish();
    await vi.waitFor(() => expect(onPublished).toHaveBeenCalled());
    expect(requests(fetchMock, 'PUT', '/api/admin/flows/routing')).toEqual([
      {
        routing: {
          defaultFlow: 'email',
          keywordFlow: null,
          campaigns: { '2145': 'email' },
          keywords: {},
          offers: { '123': 'refundable', '77': 'help' },
        },
        basedOn: 3,
      },
    ]);
  });

  it('sends no offers when the routing has none, and lists none', async () => {
    const fetchMock = mockApi({ 'PUT /api/admin/flows/routing': { body: { version: 4 } } });
    const { offers: _none, ...withoutOffers } = ROUTING;
    const onPublished = renderEditor(withoutOffers);
    expect(screen.queryByTestId('flows-offer-routes')).toBeNull();
    fireEvent.change(screen.getByLabelText('Default flow'), { target: { value: 'email' } });
    await publish();
    await vi.waitFor(() => expect(onPublished).toHaveBeenCalled());
    const [sent] = requests(fetchMock, 'PUT', '/api/admin/flows/routing') as { routing: Record<string, unknown> }[];
    expect('offers' in sent.routing).toBe(false);
  });
});
