# Prophet on titan plan's backtest origins: the forecaster people reach for first, fitted with
# daily and weekly seasonality (no yearly: the series are a month long) on only the history before
# each origin. Same arguments and output as bench/plan_r_forecast.R.
#
#   Rscript bench/plan_prophet.R DIR MODELS OUT.csv [TIMES.csv]
# DIR is what `titan plan demand ... --backtest --export DIR` writes (series.csv, setup.txt);
# MODELS is `prophet` (the only model here; the argument keeps plan_r_forecast.R's interface).
# OUT.csv is the forecasts in the form `titan plan demand --backtest --compare OUT.csv` scores;
# TIMES.csv the seconds each forecast took per origin (fit, sampling and prediction; loading the
# package is not counted). Debian: r-cran-prophet, which conflicts with titan's build
# dependencies: bench/prophet_chroot.sh makes a bookworm chroot that has it.
#
# Quantiles: one fit per origin and `predictive_samples`, whose 1000 draws (prophet's default
# uncertainty.samples, kept) are the very draws `predict` takes its interval ends from; every
# requested quantile is an empirical quantile of them. One fit per interval width would refit the
# same MAP model three times and draw three independent sample sets, so the 0.05 and 0.95 ends
# would come from different simulations and the time per forecast would triple for nothing.
# `point` is prophet's yhat (its point forecast, the expected value); the 0.5 quantile is the
# draws' median.
suppressMessages(library(prophet))
args <- commandArgs(TRUE)
dir <- args[1]; models <- strsplit(args[2], ",")[[1]]; out <- args[3]
times_out <- if (length(args) >= 4) args[4] else NULL
if (!identical(models, "prophet")) stop("plan_prophet.R runs only the model 'prophet'")
setup <- list()
for (line in readLines(file.path(dir, "setup.txt"))) {
  w <- strsplit(line, " ")[[1]]; setup[[w[1]]] <- as.numeric(w[-1])
}
series <- read.csv(file.path(dir, "series.csv"), na.strings = "NA")
ds <- as.POSIXct(series$time, format = "%Y-%m-%dT%H:%M:%SZ", tz = "UTC")
y <- series$value
H <- setup$horizon; step <- setup$step_seconds; levels <- setup$levels

rows <- list(); timing <- list()
for (o in setup$origins) {
  # History: steps 0 .. o-1 (R's 1 .. o). Gaps stay NA: prophet drops them from the fit.
  history <- data.frame(ds = ds[1:o], y = y[1:o])
  future <- data.frame(ds = ds[o] + step * (1:H))
  t0 <- proc.time()[["elapsed"]]
  fc <- tryCatch({
    m <- suppressMessages(prophet(history, daily.seasonality = TRUE,
                                  weekly.seasonality = TRUE, yearly.seasonality = FALSE))
    draws <- predictive_samples(m, future)$yhat
    list(point = predict(m, future)$yhat,
         quantiles = lapply(levels, function(q) apply(draws, 1, quantile, probs = q, names = FALSE)))
  }, error = function(e) { message("prophet at origin ", o, ": ", conditionMessage(e)); NULL })
  timing[[length(timing) + 1]] <- data.frame(model = "prophet", origin = o,
                                             seconds = proc.time()[["elapsed"]] - t0)
  if (is.null(fc)) next
  frame <- data.frame(model = "prophet", origin = o, h = 1:H, point = fc$point)
  for (i in seq_along(levels)) frame[[format(levels[i])]] <- fc$quantiles[[i]]
  rows[[length(rows) + 1]] <- frame
  message("prophet: origin ", o, " in ", round(timing[[length(timing)]]$seconds, 2), " s")
}
all <- do.call(rbind, rows)
names(all) <- c("model", "origin", "h", "point", sapply(levels, format))
write.csv(all, out, row.names = FALSE, quote = FALSE)
if (!is.null(times_out)) write.csv(do.call(rbind, timing), times_out, row.names = FALSE, quote = FALSE)
