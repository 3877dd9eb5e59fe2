import { firstTouch, mergeUtmParams, readCampaignParams, rememberCampaignParams, UTM_STORAGE_KEY } from './campaign-params';

const FIRST = new Date('2025-05-04T10:00:00.000Z');
const LATER = new Date('2025-05-05T12:00:00.000Z');

function stored(): unknown {
  return JSON.parse(window.localStorage.getItem(UTM_STORAGE_KEY) ?? 'null');
}

describe('readCampaignParams', () => {
  it('takes the six campaign parameters that have a value', () => {
    expect(
      readCampaignParams('?keyword=yahoo+mail&campaignid=123&utm_source=google&utm_medium=&gclid=%20&other=x'),
    ).toEqual({ keyword: 'yahoo mail', campaignid: '123', utm_source: 'google' });
  });
});

describe('utm_params in local storage', () => {
  it('stores the first visit with its time and nulls for what the query lacks', () => {
    expect(rememberCampaignParams({ utm_source: 'google', keyword: 'email' }, FIRST)).toEqual({
      utm_source: 'google',
      utm_medium: null,
      utm_campaign: null,
      campaignid: null,
      keyword: 'email',
      gclid: null,
      first_visit_timestamp: '2025-05-04T10:00:00.000Z',
    });
    expect(stored()).toMatchObject({ utm_source: 'google', keyword: 'email', gclid: null });
  });

  it('keeps the first campaign touch whole, whatever comes later, with the first visit time', () => {
    rememberCampaignParams({}, FIRST);
    rememberCampaignParams({ utm_source: 'google', utm_campaign: 'spring', gclid: 'g1' }, LATER);
    rememberCampaignParams({ utm_source: 'bing', campaignid: '42' }, LATER);
    expect(stored()).toEqual({
      utm_source: 'google',
      utm_medium: null,
      utm_campaign: 'spring',
      campaignid: null,
      keyword: null,
      gclid: 'g1',
      first_visit_timestamp: '2025-05-04T10:00:00.000Z',
    });
    expect(firstTouch()).toEqual({ utm_source: 'google', utm_campaign: 'spring', gclid: 'g1' });
  });

  it('starts over from a stored value that is not a record', () => {
    window.localStorage.setItem(UTM_STORAGE_KEY, 'not json');
    expect(rememberCampaignParams({ gclid: 'g2' }, LATER).gclid).toBe('g2');
    expect(mergeUtmParams(['x'], {}, LATER).first_visit_timestamp).toBe('2025-05-05T12:00:00.000Z');
  });
});
