// Models gw routes to, with what it charges per million tokens (exact, never rounded).
import { useState } from 'preact/hooks';
import { useLoad } from '../hooks.js';
import { exactAmount } from '../money.js';
import { ListTable, PageHeader } from '../ui.js';
import type { ModelRow } from '../types.js';

/** "0.01 USD per web search (vendor_a)" for each price the listed vendors charge. */
function webSearchPrices(models: readonly ModelRow[], currency: string): string[] {
  const vendorsByPrice = new Map<string, Set<string>>();
  for (const model of models) {
    if (model.web_search_price_per_search === null) continue;
    const price = exactAmount(model.web_search_price_per_search);
    const vendors = vendorsByPrice.get(price) ?? new Set<string>();
    vendors.add(model.vendor);
    vendorsByPrice.set(price, vendors);
  }
  return [...vendorsByPrice].map(
    ([price, vendors]) => `${price} ${currency} per web search (${[...vendors].join(', ')})`,
  );
}

export function ModelsPage() {
  const models = useLoad<{ data: ModelRow[] }>('/models');
  const [filter, setFilter] = useState('');
  const needle = filter.trim().toLowerCase();
  // Every price is in the settlement currency: named once, above the table.
  const currency = models.data?.data[0]?.currency ?? 'USD';
  const searches = webSearchPrices(models.data?.data ?? [], currency);
  const shown = models.data
    ? models.data.data.filter((model) => model.id.toLowerCase().includes(needle))
    : null;
  return (
    <>
      <PageHeader title="Models & prices">
        What each model costs through gw per million tokens, in {currency}. Prompt tokens the vendor
        writes to or reads from its prompt cache are charged at the cache rates
        {searches.length > 0 ? `; a vendor's web search tool, at ${searches.join('; ')}.` : '.'}
      </PageHeader>
      <label class="search">
        Filter models
        <input
          type="search"
          value={filter}
          placeholder="e.g. gpt-4o"
          onInput={(event) => setFilter(event.currentTarget.value)}
        />
      </label>
      <ListTable
        list={models}
        rows={shown}
        what="models"
        empty={`No model matches “${filter}”.`}
        rowKey={(model) => model.id}
        columns={[
          { header: 'Model', cell: (model) => <code>{model.id}</code> },
          { header: 'Vendor', cell: (model) => model.vendor },
          {
            header: 'Input',
            numeric: true,
            cell: (model) => exactAmount(model.input_price_per_million_tokens),
          },
          {
            header: 'Output',
            numeric: true,
            cell: (model) => exactAmount(model.output_price_per_million_tokens),
          },
          {
            header: 'Cache write (5m · 1h)',
            numeric: true,
            cell: (model) =>
              `${exactAmount(model.cache_write_price_per_million_tokens)} · ${exactAmount(
                model.cache_write_1h_price_per_million_tokens,
              )}`,
          },
          {
            header: 'Cache read',
            numeric: true,
            cell: (model) => exactAmount(model.cache_read_price_per_million_tokens),
          },
          {
            header: 'Max output',
            numeric: true,
            cell: (model) => model.max_output_tokens.toLocaleString(),
          },
          { header: 'Tools', cell: (model) => (model.supports_tools ? 'yes' : 'no') },
        ]}
      />
    </>
  );
}
