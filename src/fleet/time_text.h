// Times in fleet histories and on titan predict's command line: UTC calendar times or Unix
// seconds. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace titan::fleet {

// Parses "2016-10-01", "2016-10-01 08:14:20", "2016-10-01T08:14:20.5Z", "...+02:00" (an
// offset is applied; no offset means UTC) or a bare number of seconds since the Unix epoch
// ("1475309660.5"). Years 1900-9999. False when malformed.
bool ParseTimeSeconds(std::string_view text, double* seconds);

// "2016-10-01T08:14:20Z" (whole seconds, rounded down).
std::string FormatTime(double seconds);
// "2016-10-01" (the UTC day).
std::string FormatDate(double seconds);

// Seconds since the epoch of 00:00 UTC on the given civil date (proleptic Gregorian).
double CivilToSeconds(int year, int month, int day);
// The civil date of a time (UTC).
void SecondsToCivil(double seconds, int* year, int* month, int* day);

}  // namespace titan::fleet
