# R's forecast package on titan plan's backtest origins: the models people use for series with
# long seasonal periods (stlf = mstl + ETS, the same with ARIMA, tbats, auto.arima with Fourier
# terms, seasonal naive), each forecasting from only the history before each origin.
#
#   Rscript bench/plan_r_forecast.R DIR MODELS OUT.csv [TIMES.csv]
# DIR is what `titan plan demand ... --backtest --export DIR` writes (series.csv, setup.txt);
# MODELS is a comma list of r_snaive, r_stlf, r_stlf_arima, r_tbats, r_arima_fourier. OUT.csv is
# the forecasts in the form `titan plan demand --backtest --compare OUT.csv` scores; TIMES.csv
# the seconds each model took per origin. Debian: r-cran-forecast.
suppressMessages(library(forecast))
args <- commandArgs(TRUE)
dir <- args[1]; models <- strsplit(args[2], ",")[[1]]; out <- args[3]
times_out <- if (length(args) >= 4) args[4] else NULL
setup <- list()
for (line in readLines(file.path(dir, "setup.txt"))) {
  w <- strsplit(line, " ")[[1]]; setup[[w[1]]] <- as.numeric(w[-1])
}
y <- read.csv(file.path(dir, "series.csv"), na.strings = "NA")$value
m1 <- setup$steps_per_day; m2 <- 7 * m1; H <- setup$horizon; levels <- setup$levels
# The central intervals whose ends are the requested quantiles (0.05 -> 90%), and where each
# quantile is found: q < 0.5 the lower end, q > 0.5 the upper end, 0.5 the point forecast.
widths <- sort(unique(round(100 * abs(1 - 2 * levels[levels != 0.5]), 6)))
pick <- function(fc, q) {
  if (q == 0.5) return(as.numeric(fc$mean))
  k <- match(round(100 * abs(1 - 2 * q), 6), widths)
  if (q < 0.5) as.numeric(fc$lower[, k]) else as.numeric(fc$upper[, k])
}
# A history with gaps: R's models need none; interpolate them (na.interp is forecast's own).
history <- function(o) {
  x <- y[1:o]
  if (anyNA(x)) x <- as.numeric(na.interp(ts(x, frequency = m1)))
  x
}
seasons <- function(x) {
  periods <- c(m1, m2)[c(m1, m2) * 2 < length(x)]
  if (length(periods) == 0) ts(x) else msts(x, seasonal.periods = periods)
}
fit_one <- function(model, x) {
  s <- seasons(x)
  switch(model,
    r_snaive = snaive(ts(x, frequency = m1), h = H, level = widths),
    r_stlf = stlf(s, h = H, level = widths),
    r_stlf_arima = stlf(s, h = H, method = "arima", level = widths),
    r_tbats = forecast(tbats(s, use.parallel = FALSE), h = H, level = widths),
    r_arima_fourier = {
      periods <- attr(s, "msts")
      if (is.null(periods)) {
        forecast(auto.arima(x), h = H, level = widths)
      } else {
        K <- pmin(c(6, 3)[seq_along(periods)], periods %/% 2 - 1)
        fit <- auto.arima(s, xreg = fourier(s, K = K), seasonal = FALSE)
        forecast(fit, xreg = fourier(s, K = K, h = H), level = widths)
      }
    },
    stop("unknown model ", model))
}
rows <- list(); timing <- list()
for (o in setup$origins) {
  x <- history(o)
  for (model in models) {
    t0 <- proc.time()[["elapsed"]]
    fc <- tryCatch(fit_one(model, x), error = function(e) {
      message(model, " at origin ", o, ": ", conditionMessage(e)); NULL })
    timing[[length(timing) + 1]] <- data.frame(model = model, origin = o,
                                               seconds = proc.time()[["elapsed"]] - t0)
    if (is.null(fc)) next
    frame <- data.frame(model = model, origin = o, h = 1:H, point = as.numeric(fc$mean))
    for (q in levels) frame[[format(q)]] <- pick(fc, q)
    rows[[length(rows) + 1]] <- frame
  }
}
all <- do.call(rbind, rows)
names(all) <- c("model", "origin", "h", "point", sapply(levels, format))
write.csv(all, out, row.names = FALSE, quote = FALSE)
if (!is.null(times_out)) write.csv(do.call(rbind, timing), times_out, row.names = FALSE, quote = FALSE)
