import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { vi } from 'vitest';
import { mockApi } from '../../test/fetch-mock';
import { CostUpload, NO_FILE, NOTHING_LOADED, TOO_LARGE, UPLOAD_FAILED, loadedText } from './CostUpload';
import type { CostsLoaded } from './operations-api';

const NOTHING: CostsLoaded = { from: null, to: null, days: 0, campaigns: 0, cost_cents: 0 };
const NOVEMBER: CostsLoaded = { from: '2026-11-01', to: '2026-11-30', days: 30, campaigns: 3, cost_cents: 123_456 };

// The export's own shape: title lines, its column names, thousands separators, a currency column.
const REPORT = [
  'Campaign report',
  'November 1, 2026 - November 30, 2026',
  'Day,Campaign ID,Campaign,Clicks,Cost,Currency code',
  '2026-11-01,111,Printers,"1,204","1,234.56",USD',
].join('\n');

function csvFile(text = REPORT, name = 'Campaign report.csv'): File {
  return new File([text], name, { type: 'text/csv' });
}

function choose(file: File) {
  fireEvent.change(screen.getByLabelText('Campaign report (CSV)'), { target: { files: [file] } });
}

function upload() {
  fireEvent.click(screen.getByRole('button', { name: 'Upload costs' }));
}

describe('CostUpload', () => {
  it('uploads the file as it is, says what was stored, and shows what is loaded then', async () => {
    let loaded = NOTHING;
    const fetchMock = mockApi({
      'GET /api/admin/costs': () => ({ body: loaded }),
      'POST /api/admin/costs': () => {
        loaded = NOVEMBER;
        return {
          body: {
            message: 'Costs loaded for 3 campaigns from 2026-11-01 to 2026-11-30: $1,234.56.',
            from: '2026-11-01',
            to: '2026-11-30',
            days: 30,
            campaigns: 3,
            rows: 90,
            cost_cents: 123_456,
            replaced: 0,
          },
        };
      },
    });
    const onLoaded = vi.fn<() => void>();
    render(<CostUpload onLoaded={onLoaded} />);

    expect(screen.getByRole('heading', { name: 'Ad costs' })).toBeTruthy();
    expect(await screen.findByText(NOTHING_LOADED)).toBeTruthy();
    const input = screen.getByLabelText('Campaign report (CSV)') as HTMLInputElement;
    expect(input.type).toBe('file');
    expect(input.accept).toBe('.csv,text/csv');
    // The field is described by what the file must be.
    expect(document.getElementById(input.getAttribute('aria-describedby') ?? '')?.textContent).toMatch(
      /Campaign ID, Clicks, Cost and Currency code/,
    );

    const file = csvFile();
    choose(file);
    upload();
    expect(screen.getByRole('button', { name: 'Uploading...' }).hasAttribute('disabled')).toBe(true);

    const done = await screen.findByRole('status');
    expect(done.textContent).toBe('Costs loaded for 3 campaigns from 2026-11-01 to 2026-11-30: $1,234.56.');
    expect(onLoaded).toHaveBeenCalledTimes(1);
    expect(
      await screen.findByText('Costs loaded for 1 Nov 2026 – 30 Nov 2026, 3 campaigns, $1,234.56.'),
    ).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Upload costs' }).hasAttribute('disabled')).toBe(false);

    const post = fetchMock.mock.calls.find(([, init]) => init?.method === 'POST');
    expect(String(post?.[0])).toBe('/api/admin/costs');
    const init = post?.[1];
    expect(init?.body).toBe(file);
    expect(new Headers(init?.headers).get('Content-Type')).toBe('text/csv');
    expect(init?.credentials).toBe('same-origin');
  });

  it("shows the server's words when it refuses a file, and stores nothing", async () => {
    mockApi({
      'GET /api/admin/costs': { body: NOVEMBER },
      'POST /api/admin/costs': {
        status: 400,
        body: {
          error: 'invalid_costs',
          message: 'Row 7, column Cost: "12,3x" is not an amount.',
          row: 7,
          column: 'Cost',
        },
      },
    });
    const onLoaded = vi.fn<() => void>();
    render(<CostUpload onLoaded={onLoaded} />);
    choose(csvFile('Day,Campaign ID,Clicks,Cost,Currency code\n2026-11-01,111,3,"12,3x",USD'));
    upload();
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toBe('Row 7, column Cost: "12,3x" is not an amount.');
    expect(onLoaded).not.toHaveBeenCalled();
    expect(screen.queryByRole('status')).toBeNull();
    expect(screen.getByText('Costs loaded for 1 Nov 2026 – 30 Nov 2026, 3 campaigns, $1,234.56.')).toBeTruthy();
  });

  it('asks for a file, refuses one too large before sending it, and says when the upload failed', async () => {
    const fetchMock = mockApi({
      'GET /api/admin/costs': { body: NOTHING },
      'POST /api/admin/costs': { status: 500, body: { error: 'internal', message: 'database exploded' } },
    });
    render(<CostUpload onLoaded={() => {}} />);
    await screen.findByText(NOTHING_LOADED);

    upload();
    expect(screen.getByRole('alert').textContent).toBe(NO_FILE);

    const huge = csvFile();
    Object.defineProperty(huge, 'size', { value: 5 * 1024 * 1024 + 1 });
    choose(huge);
    upload();
    expect(screen.getByRole('alert').textContent).toBe(TOO_LARGE);
    expect(fetchMock.mock.calls.some(([, init]) => init?.method === 'POST')).toBe(false);

    choose(csvFile());
    upload();
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe(UPLOAD_FAILED));
  });

  it('says which days of the range have no cost', () => {
    expect(loadedText({ from: '2026-11-01', to: '2026-11-30', days: 28, campaigns: 1, cost_cents: 5 })).toBe(
      'Costs loaded for 1 Nov 2026 – 30 Nov 2026 (28 days of 30), 1 campaign, $0.05.',
    );
    expect(loadedText({ from: '2026-09-30', to: '2026-09-30', days: 1, campaigns: 2, cost_cents: 999_999_999 })).toBe(
      'Costs loaded for 30 Sep 2026 – 30 Sep 2026, 2 campaigns, $9,999,999.99.',
    );
  });
});
