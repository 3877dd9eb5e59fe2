import { PRESERVED_KEY, preserveHelpFunnel, restoreHelpFunnel, type HelpFunnelRecord } from './preserved';

const RECORD: HelpFunnelRecord = {
  timestamp: 1_000_000,
  userIssue: 'Printer says offline',
  rawUserInput: 'my printer says offline',
  aiIntro: 'Printers drop off the network after an update.',
  funnel: 'help_funnel',
  campaignid: '555',
  keyword: 'printer',
  headline: 'Need Printer Help? Get Instant Expert Help Now!',
};

afterEach(() => window.sessionStorage.clear());

describe('preserved funnel data', () => {
  it('keeps the help funnel for an hour, in the spec key and shape', () => {
    preserveHelpFunnel(RECORD);
    const stored = JSON.parse(window.sessionStorage.getItem(PRESERVED_KEY) ?? 'null');
    expect(stored).toEqual({ data: { help_funnel: RECORD }, source: 'help_funnel', timestamp: 1_000_000 });
    expect(restoreHelpFunnel(1_000_000 + 59 * 60 * 1000)).toEqual(RECORD);
    expect(restoreHelpFunnel(1_000_000 + 60 * 60 * 1000)).toBeNull();
  });

  it('ignores what is missing or broken', () => {
    expect(restoreHelpFunnel()).toBeNull();
    window.sessionStorage.setItem(PRESERVED_KEY, '{not json');
    expect(restoreHelpFunnel()).toBeNull();
    preserveHelpFunnel({ ...RECORD, rawUserInput: '  ' });
    expect(restoreHelpFunnel(1_000_001)).toBeNull();
  });
});
